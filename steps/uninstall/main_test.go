package uninstall

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"testing"

	"github.com/openagentcore/oac-node-install/steps/docker"
	"github.com/openagentcore/oac-node-install/steps/generation"
	"github.com/openagentcore/oac-node-install/steps/generation/generationtest"
	"github.com/openagentcore/oac-node-install/steps/hosttest"
	"github.com/openagentcore/oac-node-install/steps/privsep"
)

// TestMain lets the test binary serve as its own service-account child.
func TestMain(m *testing.M) {
	privsep.ServeChild(os.Args[1:], map[string]privsep.Handler{
		generation.UninstallRole: generation.ServeUninstallStep(generation.UninstallAdapters{
			Docker: func(context.Context, string) (generation.UninstallNetworks, error) {
				return fileEngineOf(os.Getenv("HOME")), nil
			},
		}),
	})
	code := m.Run()
	generationtest.Cleanup()
	os.Exit(code)
}

// fileEngine is a Docker Engine kept in a JSON file (<base>/engine, where
// the host root is <base>/host and the account's home
// <base>/host/var/lib/oac-node), so the child and the test see the same
// engine.
type fileEngine struct{ path string }

type engineState struct {
	Nets       map[string]map[string]string `json:"nets"`
	Containers map[string]map[string]string `json:"containers"`
}

func fileEngineOf(home string) *fileEngine {
	return &fileEngine{path: filepath.Join(hosttest.EngineDir(home), "state.json")}
}

func (f *fileEngine) state() (engineState, error) {
	st := engineState{}
	data, err := os.ReadFile(f.path)
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

func (f *fileEngine) save(st engineState) error {
	data, _ := json.Marshal(st)
	if err := os.WriteFile(f.path, data, 0o666); err != nil {
		return err
	}
	os.Chmod(f.path, 0o666) // the owner only; the child writes what the test made
	return nil
}

func (f *fileEngine) NetworkInspect(_ context.Context, name string) (docker.Network, error) {
	st, err := f.state()
	if err != nil {
		return docker.Network{}, err
	}
	if l, ok := st.Nets[name]; ok {
		return docker.Network{Name: name, Labels: l}, nil
	}
	return docker.Network{}, fmt.Errorf("%s: %w", name, docker.ErrNotFound)
}

func (f *fileEngine) NetworkRemove(_ context.Context, name string) error {
	st, err := f.state()
	if err != nil {
		return err
	}
	if _, ok := st.Nets[name]; !ok {
		return fmt.Errorf("%s: %w", name, docker.ErrNotFound)
	}
	delete(st.Nets, name)
	return f.save(st)
}

func (f *fileEngine) ContainersByLabel(_ context.Context, key, value string) ([]docker.Container, error) {
	st, err := f.state()
	if err != nil {
		return nil, err
	}
	var out []docker.Container
	for id, l := range st.Containers {
		if l[key] == value {
			out = append(out, docker.Container{ID: id, Labels: l})
		}
	}
	return out, nil
}
