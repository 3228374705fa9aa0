#include "http/tls.h"

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "net/ip.h"

namespace pylon::http {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct GensFree {
  void operator()(GENERAL_NAMES* g) const { GENERAL_NAMES_free(g); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long len = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<std::size_t>(len));
}

Result<std::string> CertPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!bio || PEM_write_bio_X509(bio.get(), cert) != 1)
    return Fail(ErrorCode::kInternal, "PEM_write_bio_X509: " + OpenSslErrors());
  return BioText(bio.get());
}

Status AddExt(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return Fail(ErrorCode::kInternal, "X509V3_EXT_conf_nid: " + OpenSslErrors());
  int ok = X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
  if (ok != 1) return Fail(ErrorCode::kInternal, "X509_add_ext: " + OpenSslErrors());
  return Ok();
}

Result<X509Ptr> MakeCert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
                         int days, long serial) {
  X509Ptr cert(X509_new());
  if (!cert) return Fail(ErrorCode::kInternal, "X509_new: " + OpenSslErrors());
  X509_set_version(cert.get(), 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert.get()), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), 60L * 60 * 24 * days);
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  (void)issuer_key;
  return cert;
}

}  // namespace

std::string OpenSslErrors() {
  std::string out;
  unsigned long e;
  while ((e = ERR_get_error()) != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof(buf));
    if (!out.empty()) out += "; ";
    out += buf;
  }
  return out.empty() ? "unknown OpenSSL error" : out;
}

Result<std::shared_ptr<TlsContext>> TlsContext::FromPem(const std::string& cert_pem,
                                                        const std::string& key_pem) {
  SSL_CTX* raw = SSL_CTX_new(TLS_server_method());
  if (raw == nullptr) return Fail(ErrorCode::kInternal, "SSL_CTX_new: " + OpenSslErrors());
  std::shared_ptr<TlsContext> ctx(new TlsContext(raw));
  SSL_CTX_set_min_proto_version(raw, TLS1_2_VERSION);
  SSL_CTX_set_mode(raw, SSL_MODE_AUTO_RETRY);
  BioPtr cbio(BIO_new_mem_buf(cert_pem.data(), static_cast<int>(cert_pem.size())));
  X509Ptr leaf(PEM_read_bio_X509(cbio.get(), nullptr, nullptr, nullptr));
  if (!leaf) return Fail(ErrorCode::kInvalidArgument, "server certificate: " + OpenSslErrors());
  if (SSL_CTX_use_certificate(raw, leaf.get()) != 1)
    return Fail(ErrorCode::kInvalidArgument, "SSL_CTX_use_certificate: " + OpenSslErrors());
  while (X509* extra = PEM_read_bio_X509(cbio.get(), nullptr, nullptr, nullptr)) {
    if (SSL_CTX_add_extra_chain_cert(raw, extra) != 1) {
      X509_free(extra);
      return Fail(ErrorCode::kInvalidArgument, "chain certificate: " + OpenSslErrors());
    }
  }
  ERR_clear_error();  // the loop above ends on a "no start line" error
  BioPtr kbio(BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())));
  PkeyPtr key(PEM_read_bio_PrivateKey(kbio.get(), nullptr, nullptr, nullptr));
  if (!key) return Fail(ErrorCode::kInvalidArgument, "server key: " + OpenSslErrors());
  if (SSL_CTX_use_PrivateKey(raw, key.get()) != 1 || SSL_CTX_check_private_key(raw) != 1)
    return Fail(ErrorCode::kInvalidArgument, "server key does not match: " + OpenSslErrors());
  return ctx;
}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Result<CertBundle> GenerateCertificates(const std::string& common_name,
                                        const std::vector<std::string>& sans, int days) {
  PkeyPtr ca_key(EVP_EC_gen("P-256"));
  PkeyPtr srv_key(EVP_EC_gen("P-256"));
  if (!ca_key || !srv_key) return Fail(ErrorCode::kInternal, "EVP_EC_gen: " + OpenSslErrors());
  long serial_base = 0;
  RAND_bytes(reinterpret_cast<unsigned char*>(&serial_base), sizeof(serial_base));
  serial_base = (serial_base & 0x3fffffff) + 1;

  auto ca = MakeCert(ca_key.get(), common_name + "-ca", nullptr, ca_key.get(), days, serial_base);
  if (!ca) return Fail(ca.error());
  for (auto [nid, v] : {std::pair{NID_basic_constraints, "critical,CA:TRUE"},
                        std::pair{NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
                        std::pair{NID_subject_key_identifier, "hash"}}) {
    if (auto s = AddExt(ca->get(), ca->get(), nid, v); !s) return Fail(s.error());
  }
  if (X509_sign(ca->get(), ca_key.get(), EVP_sha256()) == 0)
    return Fail(ErrorCode::kInternal, "X509_sign (CA): " + OpenSslErrors());

  auto srv = MakeCert(srv_key.get(), common_name, ca->get(), ca_key.get(), days, serial_base + 1);
  if (!srv) return Fail(srv.error());
  for (auto [nid, v] : {std::pair{NID_basic_constraints, "critical,CA:FALSE"},
                        std::pair{NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                        std::pair{NID_ext_key_usage, "serverAuth"},
                        std::pair{NID_authority_key_identifier, "keyid:always"}}) {
    if (auto s = AddExt(srv->get(), ca->get(), nid, v); !s) return Fail(s.error());
  }
  std::unique_ptr<GENERAL_NAMES, GensFree> gens(sk_GENERAL_NAME_new_null());
  for (const auto& san : sans) {
    GENERAL_NAME* gen = nullptr;
    if (auto ip = net::IpAddress::Parse(san)) {
      auto bytes = ip->bytes();
      ASN1_OCTET_STRING* oct = ASN1_OCTET_STRING_new();
      ASN1_OCTET_STRING_set(oct, bytes.data(), ip->is_v4() ? 4 : 16);
      gen = GENERAL_NAME_new();
      GENERAL_NAME_set0_value(gen, GEN_IPADD, oct);
    } else {
      ASN1_IA5STRING* str = ASN1_IA5STRING_new();
      ASN1_STRING_set(str, san.data(), static_cast<int>(san.size()));
      gen = GENERAL_NAME_new();
      GENERAL_NAME_set0_value(gen, GEN_DNS, str);
    }
    sk_GENERAL_NAME_push(gens.get(), gen);
  }
  if (X509_add1_ext_i2d(srv->get(), NID_subject_alt_name, gens.get(), 0, X509V3_ADD_DEFAULT) != 1)
    return Fail(ErrorCode::kInternal, "subjectAltName: " + OpenSslErrors());
  if (X509_sign(srv->get(), ca_key.get(), EVP_sha256()) == 0)
    return Fail(ErrorCode::kInternal, "X509_sign (server): " + OpenSslErrors());

  CertBundle out;
  auto ca_pem = CertPem(ca->get());
  auto srv_pem = CertPem(srv->get());
  if (!ca_pem) return Fail(ca_pem.error());
  if (!srv_pem) return Fail(srv_pem.error());
  out.ca_cert_pem = *ca_pem;
  out.server_cert_pem = *srv_pem;
  BioPtr kbio(BIO_new(BIO_s_mem()));
  if (PEM_write_bio_PrivateKey(kbio.get(), srv_key.get(), nullptr, nullptr, 0, nullptr, nullptr) !=
      1)
    return Fail(ErrorCode::kInternal, "PEM_write_bio_PrivateKey: " + OpenSslErrors());
  out.server_key_pem = BioText(kbio.get());
  return out;
}

}  // namespace pylon::http
