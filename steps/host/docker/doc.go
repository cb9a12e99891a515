// Package docker is the installer's adapter to the host's Docker Engine,
// over the engine's HTTP API on its unix socket
// (github.com/moby/moby/client, negotiating the API version down to the
// daemon's, API 1.41 on Docker 20.10 included).
//
// It exposes only the calls the installer makes: Info (CPU and memory limit
// support, host capacity), ImageInspect and ImageLoad, NetworkInspect,
// NetworkCreate and NetworkRemove of the node's network
// oac-node-<installation-id>, and ContainersByLabel. It has no way to remove
// or prune an image: Docker images belong to the host's shared daemon.
//
// Failures are classified for the caller with errors.Is:
//
//	ErrUnavailable  the socket is missing or nobody answers on it (daemon not running)
//	ErrPermission   the socket refuses this account (not in the docker group)
//	ErrNotFound     the image, network or container does not exist (also has NotFound())
//	ErrExists       a network of that name already exists
//
// Every call has a deadline (CallTimeout; LoadTimeout for an image load),
// and an image load is watched by pings besides: an engine that answers no
// ping for LoadStallTimeout (stopped, hung) fails the load then with
// ErrNoAnswer.
//
// Consumers define their own interfaces listing the methods they call;
// steps/record/image.Inspector is one. Package dockertest serves a fake engine
// API on a unix socket, so tests exercise this adapter's real code path.
package docker
