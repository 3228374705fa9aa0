// TLS for the HTTP server: a server context from PEM text, and in-memory generation of a
// self-signed CA plus a server certificate signed by it (for test servers and the lab).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

typedef struct ssl_ctx_st SSL_CTX;

namespace pylon::http {

class TlsContext {
 public:
  // cert_pem may hold a chain (leaf first). Fails with a precise OpenSSL error text.
  static Result<std::shared_ptr<TlsContext>> FromPem(const std::string& cert_pem,
                                                     const std::string& key_pem);
  ~TlsContext();
  TlsContext(const TlsContext&) = delete;
  TlsContext& operator=(const TlsContext&) = delete;
  SSL_CTX* get() const { return ctx_; }

 private:
  explicit TlsContext(SSL_CTX* ctx) : ctx_(ctx) {}
  SSL_CTX* ctx_;
};

struct CertBundle {
  std::string ca_cert_pem;      // self-signed CA, for clients' trust (certificate-authority-data)
  std::string server_cert_pem;  // signed by the CA
  std::string server_key_pem;   // PKCS#8 private key of the server certificate
};

// ECDSA P-256 keys; validity from one hour ago for `days` days. Each SAN that parses as an IP
// address becomes an IP SAN, every other one a DNS SAN.
Result<CertBundle> GenerateCertificates(const std::string& common_name,
                                        const std::vector<std::string>& sans, int days = 365);

// The last OpenSSL error queue entries as text (and clears the queue).
std::string OpenSslErrors();

}  // namespace pylon::http
