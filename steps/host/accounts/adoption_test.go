package accounts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func adoptable() Facts {
	return Facts{
		User:          &User{Name: "oac-node", UID: 998, GID: 997, Home: "/var/lib/oac-node", Shell: "/usr/sbin/nologin"},
		PrimaryGroup:  "oac-node",
		Supplementary: []string{"docker"},
		HomeExists:    true,
		RecordedUID:   -1,
	}
}

func TestDecide(t *testing.T) {
	with := func(edit func(*Facts)) Facts {
		f := adoptable()
		u := *f.User
		f.User = &u
		edit(&f)
		return f
	}
	for _, tc := range []struct {
		name  string
		facts Facts
		want  Decision
		// refusal: phrases the message must hold (besides the ending)
		refusal []string
	}{
		{"no account, no home", Facts{RecordedUID: -1}, Create, nil},
		{"orphan home", Facts{HomeExists: true, RecordedUID: -1}, 0, []string{"/var/lib/oac-node exists", "no account oac-node", "sudo rm -rf /var/lib/oac-node"}},
		{"adoptable", adoptable(), UseExisting, nil},
		{"adoptable without home yet", with(func(f *Facts) { f.HomeExists = false }), UseExisting, nil},
		{"sbin nologin", with(func(f *Facts) { f.User.Shell = "/sbin/nologin" }), UseExisting, nil},
		{"docker and kvm", with(func(f *Facts) { f.Supplementary = []string{"kvm", "docker", "oac-node"} }), UseExisting, nil},
		{"recorded uid matches", with(func(f *Facts) { f.RecordedUID = 998 }), UseExisting, nil},
		{"bin false", with(func(f *Facts) { f.User.Shell = "/bin/false" }), 0, []string{"/bin/false", "nologin shell", "usermod --shell /usr/sbin/nologin oac-node"}},
		{"usr bin false", with(func(f *Facts) { f.User.Shell = "/usr/bin/false" }), 0, []string{"/usr/bin/false"}},
		{"login shell", with(func(f *Facts) { f.User.Shell = "/bin/bash" }), 0, []string{`login shell "/bin/bash"`, "usermod --shell"}},
		{"relative nologin", with(func(f *Facts) { f.User.Shell = "nologin" }), 0, []string{`"nologin"`}},
		{"empty shell", with(func(f *Facts) { f.User.Shell = "" }), 0, []string{`""`}},
		{"other home", with(func(f *Facts) { f.User.Home = "/home/oac-node" }), 0, []string{"home /home/oac-node", "sudo userdel oac-node"}},
		{"uid 0", with(func(f *Facts) { f.User.UID = 0 }), 0, []string{"uid 0", "root", "sudo userdel oac-node"}},
		{"gid 0", with(func(f *Facts) { f.User.GID = 0; f.PrimaryGroup = "root" }), 0, []string{"gid 0"}},
		{"foreign primary group", with(func(f *Facts) { f.PrimaryGroup = "users" }), 0, []string{"primary group users"}},
		{"primary group missing", with(func(f *Facts) { f.PrimaryGroup = "" }), 0, []string{"gid 997 (no such group)"}},
		{"extra groups", with(func(f *Facts) { f.Supplementary = []string{"sudo", "docker", "adm"} }), 0, []string{"group(s) adm, sudo", "sudo gpasswd --delete oac-node adm; sudo gpasswd --delete oac-node sudo"}},
		{"replaced account", with(func(f *Facts) { f.RecordedUID = 990 }), 0, []string{"uid 998", "uid 990", "replaced", "sudo usermod --uid 990 oac-node", "--uninstall --force"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Decide(tc.facts)
			if tc.refusal == nil {
				if err != nil || got != tc.want {
					t.Fatalf("Decide = %v, %v; want %v", got, err, tc.want)
				}
				return
			}
			if !errors.Is(err, ErrNotAdoptable) || got != 0 {
				t.Fatalf("Decide = %v, %v; want a refusal", got, err)
			}
			if errors.Is(err, ErrNotRecorded) != (tc.name == "replaced account") {
				t.Errorf("errors.Is(ErrNotRecorded) = %v", errors.Is(err, ErrNotRecorded))
			}
			msg := err.Error()
			if r := (*AdoptionError)(nil); !errors.As(err, &r) {
				t.Errorf("the refusal is not a *AdoptionError, which its caller returns as a workflow.Refusal (the command ends it with \"Nothing was changed.\"): %q", msg)
			}
			for _, p := range tc.refusal {
				if !strings.Contains(msg, p) {
					t.Errorf("refusal lacks %q: %q", p, msg)
				}
			}
		})
	}
}

func TestFacts(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	home := filepath.Join(root, "var/lib/oac-node")
	db := Under(root)
	write := func(passwd, group string) {
		os.WriteFile(filepath.Join(root, "etc/passwd"), []byte(passwd), 0o644)
		os.WriteFile(filepath.Join(root, "etc/group"), []byte(group), 0o644)
	}
	write("root:x:0:0:root:/root:/bin/bash\n", "root:x:0:\ndocker:x:990:alice\n")
	f, err := db.Facts(home, -1)
	if err != nil || f.User != nil || f.HomeExists || f.RecordedUID != -1 {
		t.Fatalf("no account: %+v %v", f, err)
	}
	os.MkdirAll(filepath.Dir(home), 0o755)
	if err := os.Symlink("/nowhere", home); err != nil {
		t.Fatal(err)
	}
	if f, _ := db.Facts(home, -1); !f.HomeExists {
		t.Fatal("a dangling link at the home path is a home that exists")
	}
	write("root:x:0:0:root:/root:/bin/bash\noac-node:x:998:997::/var/lib/oac-node:/usr/sbin/nologin\n",
		"root:x:0:\ndocker:x:990:alice,oac-node\noac-node:x:997:\nsudo:x:27:oac-node\n")
	f, err = db.Facts(home, 998)
	if err != nil || f.User == nil || f.User.UID != 998 || f.PrimaryGroup != "oac-node" ||
		strings.Join(f.Supplementary, ",") != "docker,sudo" || f.RecordedUID != 998 {
		t.Fatalf("account: %+v %v", f, err)
	}
	if _, err := Decide(f); !errors.Is(err, ErrNotAdoptable) || !strings.Contains(err.Error(), "sudo") {
		t.Fatalf("sudo membership must refuse: %v", err)
	}
}
