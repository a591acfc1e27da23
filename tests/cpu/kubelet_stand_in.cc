#include "kubelet_stand_in.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace scuda::test {

StandInKubelet::StandInKubelet(const std::string& dir, grpc::Status answer)
    : answer_(std::move(answer)) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix://" + dir + "/kubelet.sock", grpc::InsecureServerCredentials());
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (!server_) throw std::runtime_error("cannot serve kubelet.sock in " + dir);
}

StandInKubelet::~StandInKubelet() { server_->Shutdown(std::chrono::system_clock::now()); }

grpc::Status StandInKubelet::Register(grpc::ServerContext*, const v1beta1::RegisterRequest* request,
                                      v1beta1::Empty*) {
  {
    std::lock_guard lock(mutex_);
    requests_.push_back(*request);
  }
  arrived_.notify_all();
  return answer_;
}

bool StandInKubelet::wait_for_registrations(size_t count, std::chrono::milliseconds limit,
                                            v1beta1::RegisterRequest* last) {
  std::unique_lock lock(mutex_);
  if (!arrived_.wait_for(lock, limit, [&] { return requests_.size() >= count; })) return false;
  *last = requests_.back();
  return true;
}

PluginProcess::PluginProcess(const std::vector<std::string>& args, const std::string& log_path)
    : log_path_(log_path) {
  std::vector<std::string> argv = {PLUGIN_BIN};
  argv.insert(argv.end(), args.begin(), args.end());
  pid_ = fork();
  if (pid_ == 0) {
    freopen(log_path.c_str(), "w", stderr);
    std::vector<char*> c_args;
    for (std::string& s : argv) c_args.push_back(s.data());
    c_args.push_back(nullptr);
    execv(c_args[0], c_args.data());
    _exit(127);
  }
}

PluginProcess::~PluginProcess() {
  if (wait_for_exit(SIGTERM, std::chrono::seconds(10)) == -1 && pid_ > 0) {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
}

int PluginProcess::wait_for_exit(int sig, std::chrono::seconds limit) {
  if (pid_ <= 0) return -1;
  if (sig) kill(pid_, sig);
  const auto deadline = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string PluginProcess::log() const {
  std::ifstream in(log_path_);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::unique_ptr<v1beta1::DevicePlugin::Stub> connect_to_plugin(const std::string& path) {
  return v1beta1::DevicePlugin::NewStub(
      grpc::CreateChannel("unix://" + path, grpc::InsecureChannelCredentials()));
}

}  // namespace scuda::test
