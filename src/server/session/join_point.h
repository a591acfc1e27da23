// A session's door for more connections from its own client
// (docs/protocol.md, "Joining a session"): the callback channel and the
// lanes. The client joins through the listener, on the port it already
// uses: the process forked for the join reads only the join's route (the
// join point's name, in the clear) and hands the connection over a local
// socket that the session named (hand_over); the session runs TLS on it
// where the server has TLS, reads the join's handshake, and admits it when
// the secret it gave out comes with it (docs/protocol.md, "TLS").
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "common/socket.h"
#include "common/tls.h"
#include "protocol/handshake.h"
#include "server/listener/tokens.h"

namespace scuda::server {

struct SessionTable;

// What every connection's handshake must satisfy, the session's and its
// joins' alike: the server's TLS (null: none) and tokens (none: open).
struct Admission {
  std::shared_ptr<const tls::Context> tls;
  Tokens tokens;
  std::chrono::milliseconds handshake_timeout{std::chrono::seconds(10)};
  // The key job tokens are minted with (`--job-key`; "": none taken), and
  // the table that lists the jobs whose tokens were dropped.
  std::string job_key;
  SessionTable* table = nullptr;
};

// Set once, in the session process, before a join point opens.
void set_admission(Admission admission);
const Admission& admission();

// Why `hello` cannot be served (a wrong token, a dropped or expired job's,
// another build); "" if it can, and then *token is the token it gave (empty
// on a server without tokens). A job's token is named job_token_name(id).
// `dropping`: the hello asks for its token's drop, which a dropped token may
// ask again.
std::string hello_refusal(const protocol::Hello& hello, std::optional<Token>* token = nullptr,
                          bool dropping = false);

// What a client of job `job`'s dropped token is told.
std::string dropped_refusal(const std::string& job);

// Whether the server takes no token at all.
bool admits_anyone(const Admission& a);

class JoinPoint {
 public:
  // Takes an admitted connection, which it must answer (acknowledge_join);
  // true once no more joins are wanted.
  using Take = std::function<bool(Socket)>;

  // Starts waiting for joins the first time, under a new name that says
  // `what` they are for; says the name and the secret that a join must carry.
  bool open(const char* what, Take take, std::string* name, std::string* secret,
            std::string* error);

 private:
  void accept_joins(Socket listener);
  // The connection a join handed over, once its TLS and handshake pass.
  Socket admit(Socket& peer);
  // Reads the join's handshake; false (the client told why) unless it
  // carries the token, this join point's name and its secret.
  bool check_join(Socket& client);

  std::mutex mu_;
  std::string what_;
  std::string name_;
  std::string secret_;
  Take take_;
};

// Tells a joined client that the session has it.
bool acknowledge_join(Socket& client);

// In the process forked for a join: hands the client's connection to the
// session whose join point `name` is (the join's route). The session runs
// the rest of the handshake and answers the client itself.
bool hand_over(Socket& client, const std::string& name, std::string* error);

}  // namespace scuda::server
