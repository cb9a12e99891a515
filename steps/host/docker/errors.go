package docker

import "errors"

// ErrUnavailable means the Docker daemon cannot be reached: the socket is
// missing or nothing accepts connections on it. The operator starts it with
// `sudo systemctl enable --now docker`.
var ErrUnavailable = errors.New("the Docker daemon is not running")

// ErrPermission means the socket exists but refuses this account.
var ErrPermission = errors.New("permission denied on the Docker socket")

// ErrNotFound means the engine holds no such image, network or container.
// It has the NotFound() method of the errdefs convention, so
// steps/record/image.IsNotFound recognises it.
var ErrNotFound error = notFoundError{}

// ErrExists means a network of the requested name already exists.
var ErrExists = errors.New("already exists")

type notFoundError struct{}

func (notFoundError) Error() string { return "not found" }

// NotFound marks the error as "no such object" (containerd errdefs).
func (notFoundError) NotFound() {}
