// tls_record_layer.cc: how fast OpenSSL's TLS 1.3 record layer encrypts
// (SSL_write) and decrypts (SSL_read) on one thread with no socket at all:
// a client and a server over an in-memory BIO pair. Beside `openssl speed
// -evp aes-256-gcm`, it says what the records cost above the cipher.
//   g++ -O2 -std=c++20 -o /tmp/tls_record_layer tls_record_layer.cc -lssl -lcrypto
//   /tmp/tls_record_layer MIB CERT_DIR
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>
using C = std::chrono::steady_clock;
static std::string cert_dir;
static SSL_CTX* ctx(bool server) {
  SSL_CTX* c = SSL_CTX_new(server ? TLS_server_method() : TLS_client_method());
  SSL_CTX_set_min_proto_version(c, TLS1_3_VERSION);
  SSL_CTX_set_num_tickets(c, 0);
  SSL_CTX_set_mode(c, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  if (server) {
    SSL_CTX_use_certificate_file(c, (cert_dir + "/cert.pem").c_str(), SSL_FILETYPE_PEM);
    SSL_CTX_use_PrivateKey_file(c, (cert_dir + "/key.pem").c_str(), SSL_FILETYPE_PEM);
  }
  return c;
}
int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: tls_record_layer MIB CERT_DIR\n");
    return 2;
  }
  size_t total = size_t(atoi(argv[1])) << 20;
  cert_dir = argv[2];
  SSL* cl = SSL_new(ctx(false));
  SSL* sv = SSL_new(ctx(true));
  BIO *a, *b;
  BIO_new_bio_pair(&a, 4 << 20, &b, 4 << 20);
  SSL_set_bio(cl, a, a);
  SSL_set_bio(sv, b, b);
  SSL_set_connect_state(cl);
  SSL_set_accept_state(sv);
  for (int i = 0; i < 100 && (!SSL_is_init_finished(cl) || !SSL_is_init_finished(sv)); ++i) {
    SSL_do_handshake(cl);
    SSL_do_handshake(sv);
  }
  printf("%s\n", SSL_get_cipher_name(cl));
  std::vector<char> src(1 << 20, 3), dst(1 << 20);
  double enc = 0, dec = 0;
  for (size_t done = 0; done < total;) {
    // Encrypt up to ~3.9 MiB into the pair, then decrypt it all.
    auto t0 = C::now();
    size_t put = 0;
    while (put < (3u << 20)) {
      size_t n = 0;
      if (SSL_write_ex(cl, src.data() + put % src.size(), 16384, &n) != 1) break;
      put += n;
    }
    auto t1 = C::now();
    size_t got = 0;
    while (got < put) {
      size_t n = 0;
      if (SSL_read_ex(sv, dst.data(), dst.size(), &n) != 1) break;
      got += n;
    }
    auto t2 = C::now();
    enc += std::chrono::duration<double>(t1 - t0).count();
    dec += std::chrono::duration<double>(t2 - t1).count();
    done += put;
  }
  printf("SSL_write %.2f GB/s, SSL_read %.2f GB/s, both on one thread %.2f GB/s\n",
         total / enc / 1e9, total / dec / 1e9, total / (enc + dec) / 1e9);
}
