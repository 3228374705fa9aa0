#include "nftables/nftables.h"

#include <nftables/libnftables.h>

#include <string>

namespace pylon::nftables {
namespace {

struct CtxDeleter {
  void operator()(nft_ctx* ctx) const { nft_ctx_free(ctx); }
};

class LibNftables final : public Nftables {
 public:
  explicit LibNftables(std::unique_ptr<nft_ctx, CtxDeleter> ctx) : ctx_(std::move(ctx)) {}

  Status Run(std::string_view commands) override {
    const std::string text(commands);
    const int rc = nft_run_cmd_from_buffer(ctx_.get(), text.c_str());
    std::string err = nft_ctx_get_error_buffer(ctx_.get());
    if (rc != 0) {
      while (!err.empty() && (err.back() == '\n' || err.back() == ' ')) err.pop_back();
      return Fail(ErrorCode::kSystem, "nftables: " + (err.empty() ? "command failed" : err));
    }
    return Ok();
  }

 private:
  std::unique_ptr<nft_ctx, CtxDeleter> ctx_;
};

}  // namespace

Result<std::unique_ptr<Nftables>> OpenNftables() {
  std::unique_ptr<nft_ctx, CtxDeleter> ctx(nft_ctx_new(NFT_CTX_DEFAULT));
  if (!ctx) return Fail(ErrorCode::kInternal, "nftables: nft_ctx_new failed");
  // Errors go to a buffer (read after each command), never to the agent's stderr.
  if (nft_ctx_buffer_error(ctx.get()) != 0 || nft_ctx_buffer_output(ctx.get()) != 0) {
    return Fail(ErrorCode::kInternal, "nftables: cannot buffer the library's output");
  }
  return std::unique_ptr<Nftables>(std::make_unique<LibNftables>(std::move(ctx)));
}

}  // namespace pylon::nftables
