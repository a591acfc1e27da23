// Where the client finds its server and token (README: "Configuration").
#pragma once

#include <string>
#include <vector>

namespace scuda {

constexpr char kDefaultPort[] = "14833";

// The server address from SCUDA_SERVER, else the first line of
// ~/.config/scuda/host; empty when neither is set (pass-through mode).
std::string configured_server();

// The servers of a list such as SCUDA_SERVER's "a:14833,b:14833": split at
// commas and whitespace, empty entries dropped, in the list's order.
std::vector<std::string> split_servers(const std::string& list);

// True when no server is configured, so a stand-in library passes every call
// to the local library it stands in for. Decided once per process, which is
// also when the stand-ins set up logging.
bool pass_through();

// The token file named by SCUDA_TOKEN_FILE; empty when unset.
std::string configured_token_file();

// The whole number in environment variable `name`, from `lowest` to
// `highest`; `fallback` when it is unset, and (with a warning) when it is
// anything else. The warning names what happens instead as `instead`, or
// as the fallback's value.
unsigned env_number(const char* name, unsigned lowest, unsigned highest, unsigned fallback,
                    const char* instead = nullptr);

// Reads a token file: its first line, without surrounding whitespace. False
// (and why) if it cannot be read or is empty.
bool read_token_file(const std::string& path, std::string* token, std::string* error);

}  // namespace scuda
