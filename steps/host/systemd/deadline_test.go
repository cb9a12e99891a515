package systemd

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A system bus that accepts the connection and never answers fails the
// dial at its deadline, saying that systemd did not answer, instead of
// hanging the command.
func TestHungSystemBusEndsAtTheDialDeadline(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "system_bus_socket")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // read nothing, answer nothing
		}
	}()
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+sock)
	old := DialTimeout
	DialTimeout = 300 * time.Millisecond
	t.Cleanup(func() { DialTimeout = old })
	start := time.Now()
	d, err := DialSystemBus(context.Background())
	if err == nil {
		d.Close()
		t.Fatal("connected to a bus that never answers")
	}
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "did not answer in time") {
		t.Errorf("err %v, want ErrUnavailable saying systemd did not answer", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the dial took %s", took)
	}
}
