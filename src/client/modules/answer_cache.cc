#include "client/modules/answer_cache.h"

#include "client/modules/record_file.h"
#include "client/state.h"
#include "client/transport/session.h"
#include "protocol/frame.h"
#include "protocol/handshake.h"
#include "protocol/ops.h"

namespace scuda::client::answers {

namespace {

// The server, as the name of its file: what it said of its driver and
// devices, and the protocol spoken.
std::string file_name() {
  protocol::Welcome w = snapshot();
  w.session_pid = 0;
  w.images_kept.clear();
  protocol::Writer out;
  out.u32(protocol::kProtocolVersion);
  encode(w, out);
  return hashed_name("answers-", {reinterpret_cast<const char*>(out.data().data()), out.size()});
}

}  // namespace

namespace parts {

// The magic changes with the bytes of what is kept (2: descriptions as
// protocol::op::FunctionDescription), so that a file of an earlier layout
// is started afresh rather than misread.
struct AnswerFile : RecordFile {
  AnswerFile() : RecordFile(file_name(), "scuda answers 2\n") {}
};

}  // namespace parts

namespace {

RecordFile& store() { return client_state().answer_file.get(); }

}  // namespace

std::string key(char kind, const protocol::Writer& question) {
  return kind + std::string(question.data().begin(), question.data().end());
}

bool find(std::string_view key, std::string* value) { return store().find(key, value); }

void remember(std::string_view key, std::string_view value) { store().remember(key, value); }

}  // namespace scuda::client::answers
