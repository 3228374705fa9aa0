# Two images from one file (docs/install.md):
#   docker build -t pylon .                       the product: the last stage, `pylon`
#   docker build -t pylon-bird --target bird .    the BGP sidecar (deploy/components/bgp)
# One image for both components: `pylon allocator` (runs as non-root) and `pylon agent`
# (root inside the container only to hold NET_ADMIN + NET_RAW; see deploy/agent.yaml).
# Only the product binary `pylon` ships; `pylon-dev` (lab, fault-proxy) is never built here.
#
# The stage `build` compiles `pylon` into /build/pylon. A builder can replace it by a directory
# holding build/pylon, already built (`--build-context build=DIR`, BuildKit and buildah):
# scripts/image.sh does so with the binary of scripts/build.sh, and the stage `pylon` below stays
# the one definition of the product image.
FROM debian:bookworm AS build
WORKDIR /src
COPY scripts/deps.sh scripts/deps.sh
RUN bash scripts/deps.sh
COPY . .
RUN cmake -S . -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DPYLON_TESTS=OFF -DPYLON_BENCH=OFF \
 && cmake --build /build --target pylon -j"$(nproc)" \
 && strip /build/pylon

# The BGP sidecar (deploy/components/bgp): BIRD 2 from Debian, configured by the agent.
FROM debian:bookworm-slim AS bird
RUN apt-get update \
 && apt-get install -y --no-install-recommends bird2 \
 && rm -rf /var/lib/apt/lists/*

# The product, and the default target: it stays the last stage.
FROM debian:bookworm-slim AS pylon
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates libcurl4 libssl3 libmnl0 \
      libyaml-cpp0.7 libnftables1 \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/pylon /usr/local/bin/pylon
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/pylon"]
