// `scuda server`: listen for clients and serve each in its own process.
#include <cstdlib>

#include <spdlog/spdlog.h>

#include "cli/commands.h"
#include "common/config.h"
#include "common/job_tokens.h"
#include "common/log.h"
#include "common/socket.h"
#include "common/tls.h"
#include "server/kernels/module_cache.h"
#include "server/listener/listener.h"
#include "server/nvml/nvml_session.h"

namespace scuda::cli {

namespace {

struct ServerArgs {
  server::ListenerOptions listener;
  std::string token_file;
  std::string tokens_file;
  std::string job_key_file;
  tls::ServerFiles tls;
  std::string nvml_path;
  bool insecure = false;
  bool verbose = false;
  std::string module_cache_dir;  // empty: the default
  uint64_t module_cache_size = uint64_t{2} << 30;
  bool no_module_cache = false;
  bool no_peer_copies = false;
  unsigned drain_seconds = 30;
  double handshake_seconds = 10;
};

// $XDG_CACHE_HOME/scuda/modules, else ~/.cache/scuda/modules.
std::string default_module_cache() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg == '/') return std::string(xdg) + "/scuda/modules";
  const char* home = std::getenv("HOME");
  if (home && *home == '/') return std::string(home) + "/.cache/scuda/modules";
  return "";
}

// Only the options: the accepting process never touches the cache.
void configure_module_cache(const ServerArgs& args) {
  server::ModuleCacheOptions cache;
  if (!args.no_module_cache)
    cache.dir = args.module_cache_dir.empty() ? default_module_cache() : args.module_cache_dir;
  cache.max_bytes = args.module_cache_size;
  if (cache.dir.empty()) spdlog::info("no module cache: clients send every image");
  else spdlog::info("module cache in {}, at most {} bytes", cache.dir, cache.max_bytes);
  server::set_module_cache_options(std::move(cache));
}

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// A non-loopback address needs TLS, so that the token and the program's
// data do not cross in the clear, and a token or client certificates, so
// that not everyone who reaches it can use the GPU; --insecure waives both.
bool exposed_safely(const ServerArgs& args, const HostPort& addr, bool tokens) {
  if (is_loopback(addr.host) || args.insecure) return true;
  if (args.tls.cert.empty()) {
    spdlog::error(
        "refusing to listen on {} without TLS: the token and every byte would cross "
        "in the clear. Give --tls-cert FILE and --tls-key FILE (`scuda cert` makes a "
        "pair), or --insecure on a trusted network",
        args.listener.listen);
    return false;
  }
  if (!tokens && args.tls.client_ca.empty()) {
    spdlog::error(
        "refusing to listen on {} without a token: anyone who can reach it could use "
        "the GPU. Give --token-file FILE (clients pass the same file), --tokens FILE or "
        "--tls-client-ca FILE, or --insecure on a trusted network",
        args.listener.listen);
    return false;
  }
  return true;
}

// --tokens (named tokens with limits, read again at SIGHUP) or --token-file
// (one unnamed token without limits), and beside either --job-key (tokens
// minted per job).
bool read_tokens(const ServerArgs& args, server::ListenerOptions* options, std::string* error) {
  if (!args.tokens_file.empty()) {
    options->tokens_file = args.tokens_file;
    if (!server::Tokens::load(args.tokens_file, &options->session.tokens, error)) return false;
  }
  if (!args.job_key_file.empty() &&
      !read_job_key(args.job_key_file, &options->session.job_key, error))
    return false;
  if (args.token_file.empty() || !args.tokens_file.empty()) return true;
  std::string token;
  if (!read_token_file(args.token_file, &token, error)) return false;
  options->session.tokens = server::Tokens::single(token);
  return true;
}

int run_server(const ServerArgs& args) {
  init_logging(args.verbose);
  HostPort addr;
  std::string error;
  if (!parse_host_port(args.listener.listen, &addr, &error, true)) {
    spdlog::error("{}", error);
    return 2;
  }
  server::ListenerOptions options = args.listener;
  options.drain_timeout = std::chrono::seconds(args.drain_seconds);
  options.session.peer_copies = !args.no_peer_copies;
  options.session.handshake_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(args.handshake_seconds * 1000));
  if (!read_tokens(args, &options, &error)) {
    spdlog::error("{}", error);
    return 2;
  }
  if (!exposed_safely(args, addr,
                      !options.session.tokens.open() || !options.session.job_key.empty()))
    return 2;
  if (!args.tls.cert.empty()) {
    options.session.tls = tls::server_context(args.tls, &error);
    if (!options.session.tls) {
      spdlog::error("TLS: {}", error);
      return 2;
    }
  }
  server::set_nvml_path(args.nvml_path);
  options.nvml_path = args.nvml_path;
  configure_module_cache(args);
  return server::serve(options);
}

}  // namespace

void add_server_command(CLI::App& app) {
  auto args = std::make_shared<ServerArgs>();
  CLI::App* cmd = app.add_subcommand("server", "Serve this machine's GPUs to scuda clients");
  cmd->add_option(
         "-l,--listen", args->listener.listen,
         "Address to listen on, HOST:PORT (port 0: the system picks one, printed at start)")
      ->capture_default_str();
  auto* token_file = cmd->add_option("--token-file", args->token_file,
                                     "File holding the shared secret clients must present")
                         ->check(CLI::ExistingFile);
  cmd->add_option("--tokens", args->tokens_file,
                  "TOML file of named tokens: secret (or sha256), max_sessions, memory, priority "
                  "each; SIGHUP reads it again")
      ->check(CLI::ExistingFile)
      ->excludes(token_file);
  cmd->add_option("--job-key", args->job_key_file,
                  "File holding the key a scheduler's prolog mints per-job tokens with "
                  "(`scuda token mint`); such a token works until its job's epilog drops it "
                  "(`scuda token drop`) or it expires")
      ->check(CLI::ExistingFile);
  cmd->add_option("--max-sessions", args->listener.max_sessions,
                  "Most client sessions served at once (0: no limit); later clients wait in a "
                  "queue, by their token's priority, then arrival")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--driver", args->listener.session.driver_path,
                  "Path of NVIDIA's libcuda.so.1 (default: search the usual places)");
  cmd->add_option("--nvml", args->nvml_path,
                  "Path of NVIDIA's libnvidia-ml.so.1 (default: search the usual places)");
  cmd->add_flag("--insecure", args->insecure,
                "Allow a non-loopback address without TLS or without a token");
  auto* cert = cmd->add_option("--tls-cert", args->tls.cert,
                               "PEM certificate (and chain) of the server: connections use TLS 1.3")
                   ->check(CLI::ExistingFile);
  auto* key = cmd->add_option("--tls-key", args->tls.key, "PEM private key of --tls-cert")
                  ->check(CLI::ExistingFile);
  cert->needs(key);
  key->needs(cert);
  cmd->add_option("--tls-client-ca", args->tls.client_ca,
                  "PEM CA: clients must present a certificate it signed (mutual TLS)")
      ->check(CLI::ExistingFile)
      ->needs(cert);
  cmd->add_option("--module-cache", args->module_cache_dir,
                  "Directory of cached module images (default: $XDG_CACHE_HOME/scuda/modules "
                  "or ~/.cache/scuda/modules)");
  cmd->add_option("--module-cache-size", args->module_cache_size,
                  "Most bytes the module cache holds; least recently used images go first")
      ->capture_default_str();
  cmd->add_flag("--no-module-cache", args->no_module_cache,
                "Keep no module images: clients send every image whole");
  cmd->add_flag("--no-peer-copies", args->no_peer_copies,
                "Never copy to or from another server's sessions directly (this server then "
                "dials no other): clients copy between servers through their own memory");
  cmd->add_option("--drain-timeout", args->drain_seconds,
                  "Seconds running sessions may go on after SIGTERM or Ctrl-C before they are "
                  "ended (a second signal ends them at once)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("--handshake-timeout", args->handshake_seconds,
                  "Seconds a new connection has to finish its handshake before it is closed")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--metrics", args->listener.metrics,
                  "Serve Prometheus metrics over HTTP at http://HOST:PORT/metrics (sessions, "
                  "bytes each way, requests, errors, GPU memory), e.g. 127.0.0.1:9400");
  cmd->add_flag("-v,--verbose", args->verbose, "Log every session");
  cmd->callback([args] { std::exit(run_server(*args)); });
}

}  // namespace scuda::cli
