package systemd

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sd "github.com/coreos/go-systemd/v22/dbus"
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

// As root, status's dial tries systemd's private socket first: a hung
// system bus daemon does not keep it from systemd, which answers on
// /run/systemd/private without the bus (systemctl does the same as root).
func TestDialPrivateFirstDoesNotWaitForAHungBus(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root may use /run/systemd/private")
	}
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
			defer conn.Close() // a hung bus daemon: answers nothing
		}
	}()
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+sock)
	old, oldPrivate := DialTimeout, dialPrivateConn
	DialTimeout = 2 * time.Second
	start := time.Now()
	var tried time.Duration
	dialPrivateConn = func(context.Context) (*sd.Conn, error) {
		tried = time.Since(start)
		return nil, errors.New("private socket test double")
	}
	t.Cleanup(func() { DialTimeout, dialPrivateConn = old, oldPrivate })
	d, err := DialPrivateFirst(context.Background())
	if err == nil {
		d.Close()
		t.Fatal("connected")
	}
	if tried == 0 || tried > DialTimeout/2 {
		t.Errorf("the private socket was tried after %s (0: never), want before the bus's deadline %s", tried, DialTimeout)
	}
}
