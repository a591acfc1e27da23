// tls_streams.cc: what K loopback streams move together, plain TCP or TLS 1.3
// with scuda's OpenSSL settings (common/tls.cc), the sender and the receiver
// in processes of their own with one thread per stream, as a client's and a
// session's lanes are; no scuda code. tlsbuf gathers the sender's records
// in a 256 KiB buffer (as common/tls_stream.cc does), tlsctx gives each
// stream an SSL_CTX of its own. Build and run (tls_openssl.sh does both):
//   g++ -O2 -std=c++20 -o /tmp/tls_streams tls_streams.cc -lssl -lcrypto -lpthread
//   /tmp/tls_streams plain|tls|tlsbuf|tlsctx K MiB_PER_STREAM CERT_DIR
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

static std::string mode, cert_dir;
static void waitfd(int fd, short ev) {
  pollfd p{fd, ev, 0};
  poll(&p, 1, -1);
}
static SSL_CTX* ctx(bool server) {
  SSL_CTX* c = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION);
  SSL_CTX_set_num_tickets(c, 0);
  SSL_CTX_set_options(c, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_TICKET);
  SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  SSL_CTX_set_read_ahead(c, 1);
  SSL_CTX_set_default_read_buffer_len(c, 256 << 10);
  if (server) {
    SSL_CTX_use_certificate_file(c, (cert_dir + "/cert.pem").c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(c, (cert_dir + "/key.pem").c_str(), SSL_FILETYPE_PEM);
  }
  return c;
}
static SSL* hs(int fd, SSL_CTX* c, bool server) {
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  SSL* s = SSL_new(c);
  SSL_set_fd(s, fd);
  for (;;) {
    int r = server ? SSL_accept(s) : SSL_connect(s);
    if (r == 1) break;
    int e = SSL_get_error(s, r);
    if (e == SSL_ERROR_WANT_READ) waitfd(fd, POLLIN);
    else if (e == SSL_ERROR_WANT_WRITE) waitfd(fd, POLLOUT);
    else {
      ERR_print_errors_fp(stderr);
      exit(1);
    }
  }
  if (mode == "tlsbuf" && !server) {
    BIO* sock = SSL_get_wbio(s);
    BIO_up_ref(sock);
    BIO* b = BIO_new(BIO_f_buffer());
    BIO_set_write_buffer_size(b, 256 << 10);
    SSL_set0_wbio(s, BIO_push(b, sock));
  }
  return s;
}
static void sendall(int fd, SSL* s, const char* p, size_t n) {
  while (n) {
    ssize_t w;
    if (!s) {
      w = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (w < 0) {
        waitfd(fd, POLLOUT);
        continue;
      }
    } else {
      size_t k = 0;
      ERR_clear_error();
      if (SSL_write_ex(s, p, n, &k) != 1) {
        waitfd(fd, SSL_get_error(s, 0) == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT);
        continue;
      }
      w = k;
    }
    p += w;
    n -= w;
  }
  if (s && mode == "tlsbuf")
    while (BIO_flush(SSL_get_wbio(s)) != 1) waitfd(fd, POLLOUT);
}
static void recvall(int fd, SSL* s, char* p, size_t n) {
  while (n) {
    ssize_t r;
    if (!s) {
      r = recv(fd, p, n, MSG_DONTWAIT);
      if (r < 0) {
        waitfd(fd, POLLIN);
        continue;
      }
      if (r == 0) exit(2);
    } else {
      size_t k = 0;
      ERR_clear_error();
      if (SSL_read_ex(s, p, n, &k) != 1) {
        waitfd(fd, POLLIN);
        continue;
      }
      r = k;
    }
    p += r;
    n -= r;
  }
}
int main(int argc, char** argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: tls_streams MODE K MIB CERT_DIR\n");
    return 2;
  }
  mode = argv[1];
  cert_dir = argv[4];
  int K = atoi(argv[2]);
  size_t total = size_t(atoi(argv[3])) << 20;
  bool tls = mode != "plain";
  int l = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(l, (sockaddr*)&a, sizeof a);
  socklen_t len = sizeof a;
  getsockname(l, (sockaddr*)&a, &len);
  listen(l, 64);
  pid_t child = fork();
  if (child == 0) {  // receiver
    SSL_CTX* c = tls ? ctx(true) : nullptr;
    std::vector<std::thread> t;
    for (int i = 0; i < K; ++i) {
      int fd = accept(l, nullptr, nullptr);
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, 4);
      t.emplace_back([=] {
        SSL* s = tls ? hs(fd, mode == "tlsctx" ? ctx(true) : c, true)
                     : (fcntl(fd, F_SETFL, O_NONBLOCK), nullptr);
        std::vector<char> buf(2 << 20);
        for (size_t at = 0; at < total; at += buf.size()) recvall(fd, s, buf.data(), buf.size());
        char ok = 1;
        while (send(fd, &ok, 1, 0) != 1) waitfd(fd, POLLOUT);
      });
    }
    for (auto& x : t) x.join();
    _exit(0);
  }
  SSL_CTX* c = tls ? ctx(false) : nullptr;
  std::vector<int> fds;
  std::vector<SSL*> ss;
  for (int i = 0; i < K; ++i) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    connect(fd, (sockaddr*)&a, sizeof a);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, 4);
    fds.push_back(fd);
    ss.push_back(tls ? hs(fd, mode == "tlsctx" ? ctx(false) : c, false)
                     : (fcntl(fd, F_SETFL, O_NONBLOCK), nullptr));
  }
  std::vector<char> src(64 << 20, 7);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> t;
  for (int i = 0; i < K; ++i)
    t.emplace_back([&, i] {
      for (size_t at = 0; at < total; at += 4 << 20)
        sendall(fds[i], ss[i], src.data() + at % src.size(), 4 << 20);
      char ok;
      for (;;) {
        ssize_t r = recv(fds[i], &ok, 1, 0);
        if (r == 1) break;
        waitfd(fds[i], POLLIN);
      }
    });
  for (auto& x : t) x.join();
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  printf("%s K=%d %.1f Gbit/s (%.2f GB/s per stream)\n", mode.c_str(), K, K * total * 8 / s / 1e9,
         total / s / 1e9);
  waitpid(child, nullptr, 0);
}
