package accountstest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/openagentcore/oac-node-install/steps/host/accounts"
	"github.com/openagentcore/oac-node-install/steps/record/layout"
)

// Fake is an accounts.Adapter over the databases under Root.
type Fake struct {
	Root string

	mu    sync.Mutex
	calls []string
	fail  map[string]error
}

// New returns a fake over root, creating empty databases when root has
// none.
func New(root string) (*Fake, error) {
	for _, name := range []string{"passwd", "group"} {
		p := filepath.Join(root, "etc", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	return &Fake{Root: root, fail: map[string]error{}}, nil
}

var _ accounts.Adapter = (*Fake)(nil)

// Fail makes the next call of verb ("create", "add-group", "remove-group",
// "delete", "delete-group") fail with err.
func (f *Fake) Fail(verb string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail[verb] = err
}

// Calls returns the calls made so far, as the shadow-utils command lines
// they stand for.
func (f *Fake) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *Fake) begin(verb, line string) error {
	f.calls = append(f.calls, line)
	if err, ok := f.fail[verb]; ok {
		delete(f.fail, verb)
		return err
	}
	return nil
}

// synced makes the databases durable after a call, as accounts.Commands
// does after every command it ran.
func (f *Fake) synced(err *error) {
	if serr := accounts.Under(f.Root).Sync(); serr != nil {
		*err = errors.Join(*err, serr)
	}
}

// table is one database as lines of colon-separated fields.
type table struct {
	path  string
	lines [][]string
}

func (f *Fake) load(name string) (*table, error) {
	t := &table{path: filepath.Join(f.Root, "etc", name)}
	b, err := os.ReadFile(t.path)
	if err != nil {
		return nil, err
	}
	for _, l := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
		if l != "" {
			t.lines = append(t.lines, strings.Split(l, ":"))
		}
	}
	return t, nil
}

func (t *table) find(name string) int {
	return slices.IndexFunc(t.lines, func(l []string) bool { return l[0] == name })
}

func (t *table) save() error {
	var b strings.Builder
	for _, l := range t.lines {
		b.WriteString(strings.Join(l, ":") + "\n")
	}
	return os.WriteFile(t.path, []byte(b.String()), 0o644)
}

func (f *Fake) CreateServiceAccount(_ context.Context, shell string) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.synced(&err)
	name := layout.Account
	if err := f.begin("create", "useradd --system --user-group --no-create-home --home-dir "+layout.Default.Home()+" --shell "+shell+" "+name); err != nil {
		return err
	}
	pw, err := f.load("passwd")
	if err != nil {
		return err
	}
	gr, err := f.load("group")
	if err != nil {
		return err
	}
	if pw.find(name) >= 0 || gr.find(name) >= 0 {
		return fmt.Errorf("useradd: user or group %s: %w", name, accounts.ErrExists)
	}
	id := 999 // system ids count down from 999, as useradd --system does
	for ; id > 100; id-- {
		used := slices.ContainsFunc(pw.lines, func(l []string) bool { return len(l) > 2 && l[2] == strconv.Itoa(id) }) ||
			slices.ContainsFunc(gr.lines, func(l []string) bool { return len(l) > 2 && l[2] == strconv.Itoa(id) })
		if !used {
			break
		}
	}
	pw.lines = append(pw.lines, []string{name, "x", strconv.Itoa(id), strconv.Itoa(id), "", layout.Default.Home(), shell})
	gr.lines = append(gr.lines, []string{name, "x", strconv.Itoa(id), ""})
	if err := f.editGshadow(func(t *table) { t.lines = append(t.lines, []string{name, "!", "", ""}) }); err != nil {
		return err
	}
	if err := pw.save(); err != nil {
		return err
	}
	return gr.save()
}

func (f *Fake) AddToGroup(_ context.Context, group string) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.synced(&err)
	if err := f.begin("add-group", "usermod --append --groups "+group+" "+layout.Account); err != nil {
		return err
	}
	if err := f.editMembers(group, true, func(m []string) ([]string, error) {
		if slices.Contains(m, layout.Account) {
			return m, nil
		}
		return append(m, layout.Account), nil
	}); err != nil {
		return err
	}
	return f.editGshadow(func(t *table) {
		if i := t.find(group); i >= 0 && !slices.Contains(strings.Split(t.lines[i][3], ","), layout.Account) {
			t.lines[i][3] = strings.Join(slices.DeleteFunc(append(strings.Split(t.lines[i][3], ","), layout.Account), func(m string) bool { return m == "" }), ",")
		}
	})
}

// editGshadow applies edit to /etc/gshadow when the host has one.
func (f *Fake) editGshadow(edit func(*table)) error {
	t, err := f.load("gshadow")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	edit(t)
	var b strings.Builder
	for _, l := range t.lines {
		b.WriteString(strings.Join(l, ":") + "\n")
	}
	return os.WriteFile(t.path, []byte(b.String()), 0o640)
}

// dropMember removes the account from every gshadow member and
// administrator list, reporting whether one listed it.
func dropMember(t *table, group string) bool {
	found := false
	for _, l := range t.lines {
		if group != "" && l[0] != group {
			continue
		}
		for _, k := range []int{2, 3} {
			list := strings.Split(l[k], ",")
			if slices.Contains(list, layout.Account) {
				found = true
				l[k] = strings.Join(slices.DeleteFunc(list, func(m string) bool { return m == layout.Account }), ",")
			}
		}
	}
	return found
}

func (f *Fake) RemoveFromGroup(_ context.Context, group string) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.synced(&err)
	if err := f.begin("remove-group", "gpasswd --delete "+layout.Account+" "+group); err != nil {
		return err
	}
	// gpasswd, unlike usermod, edits the member list whether or not the
	// account exists, and of gshadow even where group lists it no more.
	inShadow := false
	if err := f.editGshadow(func(t *table) { inShadow = dropMember(t, group) }); err != nil {
		return err
	}
	return f.editMembers(group, false, func(m []string) ([]string, error) {
		i := slices.Index(m, layout.Account)
		if i < 0 && inShadow {
			return m, nil
		}
		if i < 0 {
			return nil, fmt.Errorf("gpasswd: user %s is not a member of %s", layout.Account, group)
		}
		return slices.Delete(m, i, i+1), nil
	})
}

func (f *Fake) editMembers(group string, needUser bool, edit func([]string) ([]string, error)) error {
	pw, err := f.load("passwd")
	if err != nil {
		return err
	}
	if needUser && pw.find(layout.Account) < 0 {
		return fmt.Errorf("user %s: %w", layout.Account, accounts.ErrNotFound)
	}
	gr, err := f.load("group")
	if err != nil {
		return err
	}
	i := gr.find(group)
	if i < 0 {
		return fmt.Errorf("group %s: %w", group, accounts.ErrNotFound)
	}
	var members []string
	if gr.lines[i][3] != "" {
		members = strings.Split(gr.lines[i][3], ",")
	}
	members, err = edit(members)
	if err != nil {
		return err
	}
	gr.lines[i][3] = strings.Join(members, ",")
	return gr.save()
}

func (f *Fake) DeleteServiceAccount(context.Context) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.synced(&err)
	if err := f.begin("delete", "userdel "+layout.Account); err != nil {
		return err
	}
	pw, err := f.load("passwd")
	if err != nil {
		return err
	}
	i := pw.find(layout.Account)
	if i < 0 {
		return fmt.Errorf("userdel: user %s: %w", layout.Account, accounts.ErrNotFound)
	}
	pw.lines = slices.Delete(pw.lines, i, i+1)
	gr, err := f.load("group")
	if err != nil {
		return err
	}
	// userdel removes the account from every member list, and its own
	// group when no one else is in it.
	var kept [][]string
	for _, l := range gr.lines {
		members := slices.DeleteFunc(strings.Split(l[3], ","), func(m string) bool { return m == layout.Account || m == "" })
		l[3] = strings.Join(members, ",")
		if l[0] == layout.Account && len(members) == 0 {
			continue
		}
		kept = append(kept, l)
	}
	ownKept := slices.ContainsFunc(kept, func(l []string) bool { return l[0] == layout.Account })
	gr.lines = kept
	if err := f.editGshadow(func(t *table) {
		dropMember(t, "")
		if i := t.find(layout.Account); i >= 0 && !ownKept {
			t.lines = slices.Delete(t.lines, i, i+1)
		}
	}); err != nil {
		return err
	}
	if err := pw.save(); err != nil {
		return err
	}
	return gr.save()
}

func (f *Fake) DeleteServiceGroup(context.Context) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.synced(&err)
	if err := f.begin("delete-group", "groupdel "+layout.Account); err != nil {
		return err
	}
	gr, err := f.load("group")
	if err != nil {
		return err
	}
	i := gr.find(layout.Account)
	if i < 0 {
		return fmt.Errorf("groupdel: group %s: %w", layout.Account, accounts.ErrNotFound)
	}
	pw, err := f.load("passwd")
	if err != nil {
		return err
	}
	if slices.ContainsFunc(pw.lines, func(l []string) bool { return len(l) > 3 && l[3] == gr.lines[i][2] }) {
		return fmt.Errorf("groupdel: cannot remove the primary group of user of gid %s", gr.lines[i][2])
	}
	gr.lines = slices.Delete(gr.lines, i, i+1)
	if err := f.editGshadow(func(t *table) {
		if i := t.find(layout.Account); i >= 0 {
			t.lines = slices.Delete(t.lines, i, i+1)
		}
	}); err != nil {
		return err
	}
	return gr.save()
}

// RestrictGroup sets the account's own group's gshadow password to "!",
// making its entry (from /etc/group's) when there is none, as gpasswd
// --restrict does.
func (f *Fake) RestrictGroup(context.Context) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.synced(&err)
	if err := f.begin("restrict-group", "gpasswd --restrict "+layout.Account); err != nil {
		return err
	}
	gr, err := f.load("group")
	if err != nil {
		return err
	}
	i := gr.find(layout.Account)
	if i < 0 {
		return fmt.Errorf("gpasswd: group %s: %w", layout.Account, accounts.ErrNotFound)
	}
	return f.editGshadow(func(t *table) {
		if j := t.find(layout.Account); j >= 0 {
			t.lines[j][1] = "!"
			return
		}
		t.lines = append(t.lines, []string{layout.Account, "!", "", gr.lines[i][3]})
	})
}

// RemoveGshadowOrphans removes the gshadow entries of groups /etc/group
// lacks, as grpconv does for them.
func (f *Fake) RemoveGshadowOrphans(context.Context) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.synced(&err)
	if err := f.begin("grpconv", "grpconv"); err != nil {
		return err
	}
	gr, err := f.load("group")
	if err != nil {
		return err
	}
	return f.editGshadow(func(t *table) {
		t.lines = slices.DeleteFunc(t.lines, func(l []string) bool { return gr.find(l[0]) < 0 })
	})
}

// RemoveShadowOrphans removes the shadow entries of accounts passwd lacks,
// as pwconv does for them.
func (f *Fake) RemoveShadowOrphans(context.Context) (err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	defer f.synced(&err)
	if err := f.begin("pwconv", "pwconv"); err != nil {
		return err
	}
	pw, err := f.load("passwd")
	if err != nil {
		return err
	}
	p := filepath.Join(f.Root, "etc", "shadow")
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var kept []string
	for _, l := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		name, _, _ := strings.Cut(l, ":")
		if l == "" || pw.find(name) < 0 {
			continue
		}
		kept = append(kept, l)
	}
	out := strings.Join(kept, "\n")
	if out != "" {
		out += "\n"
	}
	return os.WriteFile(p, []byte(out), 0o640)
}
