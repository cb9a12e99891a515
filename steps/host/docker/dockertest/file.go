package dockertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/openagentcore/oac-node-install/journal/safefile"
	"github.com/openagentcore/oac-node-install/steps/host/docker"
	"github.com/openagentcore/oac-node-install/steps/record/image"
)

// FileEngine is a fake Docker Engine for the host adapter's interfaces
// (noderoot.Docker, the install and uninstall children's networks and
// containers, preflight's Info), not the API: its state lives in a JSON
// file, so that it survives the crash harness killing the process and a
// service-account child process and the test see the same engine. The
// file is replaced atomically (safefile.AtomicWrite, mode 0644), so root
// and the account may each replace it in a directory both may write.
type FileEngine struct {
	// Path is the state file; a missing file is an empty engine.
	Path string
	// ContainerdStore identifies images by manifest digest, as the
	// containerd image store does; otherwise by config digest.
	ContainerdStore bool
	// CutNextLoad makes the next load succeed and then report a cut
	// connection (in this process only).
	CutNextLoad bool

	mu sync.Mutex
}

// FileState is what a FileEngine holds.
type FileState struct {
	Images []image.Identity `json:"images,omitempty"`
	// Loads counts the loads, NetworkCreates the network creations.
	Loads          int                          `json:"loads,omitempty"`
	NetworkCreates int                          `json:"network_creates,omitempty"`
	Nets           map[string]map[string]string `json:"nets,omitempty"`       // name -> labels
	Containers     map[string]map[string]string `json:"containers,omitempty"` // id -> labels
	// Stopped is an engine that is stopped or removed: its socket
	// answers no call of the networks' and containers' (docker.ErrUnavailable).
	Stopped bool `json:"stopped,omitempty"`
}

// errStopped is what a stopped engine's socket answers, as the client
// classifies a missing socket.
var errStopped = fmt.Errorf("%w: /var/run/docker.sock (no such socket)", docker.ErrUnavailable)

// State reads the engine's state; its maps are never nil.
func (f *FileEngine) State() (FileState, error) {
	var st FileState
	data, err := os.ReadFile(f.Path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return st, err
	}
	if err == nil {
		if err := json.Unmarshal(data, &st); err != nil {
			return st, err
		}
	}
	if st.Nets == nil {
		st.Nets = map[string]map[string]string{}
	}
	if st.Containers == nil {
		st.Containers = map[string]map[string]string{}
	}
	return st, nil
}

// Save replaces the engine's state.
func (f *FileEngine) Save(st FileState) error {
	data, err := json.Marshal(st)
	if err != nil {
		return err
	}
	return safefile.AtomicWrite(f.Path, data, 0o644)
}

// update applies change to the state and saves it, in this process one
// at a time.
func (f *FileEngine) update(change func(*FileState) error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, err := f.State()
	if err != nil {
		return err
	}
	if err := change(&st); err != nil {
		return err
	}
	return f.Save(st)
}

// ImageNotFound is the error of an engine that lacks the image Ref: it
// follows the errdefs convention (a NotFound method) image.Resolve relies
// on.
type ImageNotFound struct{ Ref string }

func (e ImageNotFound) Error() string { return "No such image: " + e.Ref }
func (ImageNotFound) NotFound()       {}

func (f *FileEngine) imageID(im image.Identity) string {
	if f.ContainerdStore {
		return im.ManifestDigest
	}
	return im.ConfigDigest
}

// ImageInspect answers for an image held, by its ID.
func (f *FileEngine) ImageInspect(_ context.Context, ref string) (string, string, string, error) {
	st, err := f.State()
	if err != nil {
		return "", "", "", err
	}
	for _, im := range st.Images {
		if id := f.imageID(im); ref == id {
			return id, "linux", "amd64", nil
		}
	}
	return "", "", "", ImageNotFound{Ref: ref}
}

// ImageLoad identifies the archive at path and holds its image, counting
// the load. A crashtest build's failpoint "fake-docker-after-load" comes
// after the state is saved.
func (f *FileEngine) ImageLoad(_ context.Context, path string) error {
	id, err := image.Identify(path)
	if err != nil {
		return err
	}
	return f.hold(id)
}

// ImageLoadReader identifies the archive r streams, gzip-compressed or
// not (image.IdentifyStream), reads it to its end as the engine does, and
// holds its image, counting the load; a read error of r fails the load
// with nothing held. The failpoint is ImageLoad's.
func (f *FileEngine) ImageLoadReader(_ context.Context, r io.Reader, name string) error {
	id, err := image.IdentifyStream(r)
	if err == nil {
		_, err = io.Copy(io.Discard, r)
	}
	if err != nil {
		return fmt.Errorf("load image %s: %w", name, err)
	}
	return f.hold(id)
}

func (f *FileEngine) hold(id image.Identity) error {
	cut := false
	err := f.update(func(st *FileState) error {
		st.Loads++
		st.Images = holding(st.Images, id)
		cut, f.CutNextLoad = f.CutNextLoad, false
		return nil
	})
	if err != nil {
		return err
	}
	safefile.Failpoint("fake-docker-after-load")
	if cut {
		return errors.New("read: connection reset by peer")
	}
	return nil
}

func holding(images []image.Identity, id image.Identity) []image.Identity {
	for _, im := range images {
		if im == id {
			return images
		}
	}
	return append(images, id)
}

// AddImage makes the engine hold id without counting a load.
func (f *FileEngine) AddImage(id image.Identity) error {
	return f.update(func(st *FileState) error {
		st.Images = holding(st.Images, id)
		return nil
	})
}

// RemoveImage removes id from the engine (what only an operator does).
func (f *FileEngine) RemoveImage(id image.Identity) error {
	return f.update(func(st *FileState) error {
		var keep []image.Identity
		for _, im := range st.Images {
			if im != id {
				keep = append(keep, im)
			}
		}
		st.Images = keep
		return nil
	})
}

// NetworkInspect answers for a network held, by name.
func (f *FileEngine) NetworkInspect(_ context.Context, name string) (docker.Network, error) {
	st, err := f.State()
	if err != nil {
		return docker.Network{}, err
	}
	if st.Stopped {
		return docker.Network{}, fmt.Errorf("inspect the network %s: %w", name, errStopped)
	}
	if l, ok := st.Nets[name]; ok {
		return docker.Network{Name: name, Labels: l}, nil
	}
	return docker.Network{}, fmt.Errorf("%s: %w", name, docker.ErrNotFound)
}

// NetworkCreate holds a network name with labels (replacing one of that
// name) and counts the creation.
func (f *FileEngine) NetworkCreate(_ context.Context, name string, labels map[string]string) (string, error) {
	return "net-" + name, f.update(func(st *FileState) error {
		if st.Stopped {
			return errStopped
		}
		st.Nets[name] = labels
		st.NetworkCreates++
		return nil
	})
}

// NetworkRemove removes the network name.
func (f *FileEngine) NetworkRemove(_ context.Context, name string) error {
	return f.update(func(st *FileState) error {
		if st.Stopped {
			return errStopped
		}
		if _, ok := st.Nets[name]; !ok {
			return fmt.Errorf("%s: %w", name, docker.ErrNotFound)
		}
		delete(st.Nets, name)
		return nil
	})
}

// ContainersByLabel lists the containers whose label key is value.
func (f *FileEngine) ContainersByLabel(_ context.Context, key, value string) ([]docker.Container, error) {
	st, err := f.State()
	if err != nil {
		return nil, err
	}
	if st.Stopped {
		return nil, errStopped
	}
	var out []docker.Container
	for id, l := range st.Containers {
		if l[key] == value {
			out = append(out, docker.Container{ID: id, Labels: l})
		}
	}
	return out, nil
}

// Info is a host with the limits available and room for sandboxes.
func (f *FileEngine) Info(context.Context) (docker.HostInfo, error) {
	return docker.HostInfo{NCPU: 8, MemTotal: 16 << 30, MemoryLimit: true, CPUCfsQuota: true, CgroupVersion: "2"}, nil
}
