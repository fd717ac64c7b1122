# syntax=docker/dockerfile:1
# The trainyard binary: one image for `api`, `worker`, `migrate` and `keys`
# (docker-compose.yml picks the command). Pure Go, so the runtime stage has
# no libc, no shell and runs as an unprivileged user.

FROM golang:1.26.8-bookworm AS build
ENV GOTOOLCHAIN=local CGO_ENABLED=0
WORKDIR /src
# Modules first: this layer is reused until go.mod or go.sum change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    go build -trimpath -ldflags="-s -w" -o /out/trainyard ./cmd/trainyard

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/trainyard /usr/local/bin/trainyard
USER nonroot:nonroot
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/trainyard"]
CMD ["api"]
