// The file handling of the folders that keep content-addressed caches (the
// server's module cache, the client's compile cache): each entry is one file
// named by 64 hex digits, published whole by writing a temporary file and
// renaming it, so a reader never sees half of one; recency is the mtime, and
// trimming takes the least recently used first. Reads and writes go on
// after a signal interrupts them.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

namespace scuda {

// Reads `size` bytes from `fd`'s offset; false at an error or the file's end.
bool read_exactly(int fd, void* to, size_t size);
// Reads `size` bytes at offset `at`; false at an error or the file's end.
bool pread_exactly(int fd, void* to, size_t size, off_t at);
// Writes all `size` bytes; false at an error.
bool write_exactly(int fd, const void* from, size_t size);

// Lowercase hex of `bytes`.
std::string to_hex(std::span<const uint8_t> bytes);
// Whether `name` is an entry's name: 64 lowercase hex digits.
bool is_entry_name(std::string_view name);

// Makes `dir` (mode 0700: a cache is its user's alone) and its missing
// parents; true when it is a folder afterwards.
bool make_private_dir(const std::string& dir);

// Writes `pieces` one after another to a temporary file in `dir` and renames
// it to `dir/name`. Returns the published file open for reading and writing,
// or -1 with errno saying why.
int publish_file(const std::string& dir, const std::string& name,
                 std::initializer_list<std::string_view> pieces);

// When `dir`'s entries hold more than `limit` bytes, removes the least
// recently used (never `keep`, a path) until they hold at most `target`;
// also removes temporary files a writer that died has left. Returns the
// bytes the entries hold afterwards.
uint64_t trim_least_recent(const std::string& dir, uint64_t limit, uint64_t target,
                           const std::string& keep = {});

}  // namespace scuda
