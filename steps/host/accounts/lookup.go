package accounts

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// ErrNotFound is returned when the account or group does not exist.
var ErrNotFound = errors.New("not found")

// User is one /etc/passwd entry.
type User struct {
	Name  string
	UID   int
	GID   int
	Home  string
	Shell string
}

// Group is one /etc/group entry.
type Group struct {
	Name    string
	GID     int
	Members []string
}

// Databases names the files lookups read; Default is the host's.
type Databases struct{ Passwd, Group string }

// Default reads /etc/passwd and /etc/group.
var Default = Databases{Passwd: "/etc/passwd", Group: "/etc/group"}

// Under returns the databases of a host rooted at root.
func Under(root string) Databases {
	return Databases{Passwd: filepath.Join(root, "etc/passwd"), Group: filepath.Join(root, "etc/group")}
}

// LookupUser finds the user name.
func (d Databases) LookupUser(name string) (User, error) {
	var found *User
	err := scan(d.Passwd, 7, func(f []string) bool {
		if f[0] != name {
			return true
		}
		uid, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil {
			return true
		}
		found = &User{Name: f[0], UID: uid, GID: gid, Home: f[5], Shell: f[6]}
		return false
	})
	if err != nil {
		return User{}, err
	}
	if found == nil {
		return User{}, fmt.Errorf("user %s: %w", name, ErrNotFound)
	}
	return *found, nil
}

// LookupUserID finds the first well-formed user with uid.
func (d Databases) LookupUserID(uid int) (User, error) {
	var found *User
	err := scan(d.Passwd, 7, func(f []string) bool {
		id, err1 := strconv.Atoi(f[2])
		gid, err2 := strconv.Atoi(f[3])
		if err1 != nil || err2 != nil || id != uid {
			return true
		}
		found = &User{Name: f[0], UID: id, GID: gid, Home: f[5], Shell: f[6]}
		return false
	})
	if err != nil {
		return User{}, err
	}
	if found == nil {
		return User{}, fmt.Errorf("user %d: %w", uid, ErrNotFound)
	}
	return *found, nil
}

// LookupGroup finds the group name.
func (d Databases) LookupGroup(name string) (Group, error) {
	return d.findGroup(func(g Group) bool { return g.Name == name }, "group "+name)
}

// LookupGroupID finds the group with gid.
func (d Databases) LookupGroupID(gid int) (Group, error) {
	return d.findGroup(func(g Group) bool { return g.GID == gid }, "group "+strconv.Itoa(gid))
}

// findGroup returns the first well-formed group match accepts; what names
// it in the not-found error.
func (d Databases) findGroup(match func(Group) bool, what string) (Group, error) {
	var found *Group
	err := scan(d.Group, 4, func(f []string) bool {
		gid, err := strconv.Atoi(f[2])
		if err != nil {
			return true
		}
		g := Group{Name: f[0], GID: gid}
		if f[3] != "" {
			g.Members = strings.Split(f[3], ",")
		}
		if !match(g) {
			return true
		}
		found = &g
		return false
	})
	if err != nil {
		return Group{}, err
	}
	if found == nil {
		return Group{}, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return *found, nil
}

// GroupNames returns the names of the groups that list user as a member.
func (d Databases) GroupNames(user string) ([]string, error) {
	var names []string
	err := scan(d.Group, 4, func(f []string) bool {
		for _, m := range strings.Split(f[3], ",") {
			if m == user {
				names = append(names, f[0])
			}
		}
		return true
	})
	return names, err
}

// SupplementaryGroups returns the gids of the groups that list user as a
// member.
func (d Databases) SupplementaryGroups(user string) ([]int, error) {
	var gids []int
	err := scan(d.Group, 4, func(f []string) bool {
		for _, m := range strings.Split(f[3], ",") {
			if m == user {
				if gid, err := strconv.Atoi(f[2]); err == nil {
					gids = append(gids, gid)
				}
			}
		}
		return true
	})
	return gids, err
}

// scan calls fn with the colon-separated fields of each well-formed line
// until fn returns false.
func scan(path string, fields int, fn func([]string) bool) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64*1024), 1<<20)
	for s.Scan() {
		line := s.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, ":")
		if len(f) != fields {
			continue
		}
		if !fn(f) {
			return nil
		}
	}
	if err := s.Err(); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

// ShadowOnly reports whether shadow (beside passwd) holds an entry for name
// that passwd does not, and whether removing the shadow entries passwd
// lacks would change nothing else: every passwd entry has its password in
// shadow ("x") and its shadow entry, and name is the only orphan.
func (d Databases) ShadowOnly(name string) (orphan, alone bool, err error) {
	users := map[string]bool{}
	inShadow := true
	if err := scan(d.Passwd, 7, func(f []string) bool {
		users[f[0]] = true
		inShadow = inShadow && f[1] == "x"
		return true
	}); err != nil {
		return false, false, err
	}
	shadow := map[string]bool{}
	orphans := 0
	if _, err := os.Stat(filepath.Join(filepath.Dir(d.Passwd), "shadow")); errors.Is(err, os.ErrNotExist) {
		return false, false, nil
	}
	if err := scan(filepath.Join(filepath.Dir(d.Passwd), "shadow"), 9, func(f []string) bool {
		shadow[f[0]] = true
		if !users[f[0]] {
			orphans++
			orphan = orphan || f[0] == name
		}
		return true
	}); err != nil {
		return false, false, err
	}
	for u := range users {
		inShadow = inShadow && shadow[u]
	}
	return orphan, orphan && orphans == 1 && inShadow, nil
}

// Gshadow is what /etc/gshadow (beside the group file) says of the
// account's groups, as a shadow-utils command cut off between its renames
// of /etc/group and /etc/gshadow leaves them apart (a full /etc): useradd,
// usermod and userdel write /etc/group first.
type Gshadow struct {
	// Present: /etc/gshadow exists (a host without it has nothing to
	// keep in step).
	Present bool
	// Entries are the groups it has an entry for.
	Entries map[string]bool
	// Members are the groups whose entry lists the user as a member or
	// administrator.
	Members []string
	// Groups are the groups /etc/group has, and Passwords whether each
	// one's password field there is "x" (all in gshadow).
	Groups    map[string]bool
	Passwords bool
}

// GshadowOf reads /etc/gshadow and /etc/group for user.
func (d Databases) GshadowOf(user string) (Gshadow, error) {
	g := Gshadow{Entries: map[string]bool{}, Groups: map[string]bool{}, Passwords: true}
	p := filepath.Join(filepath.Dir(d.Group), "gshadow")
	if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
		return g, nil
	}
	g.Present = true
	if err := scan(p, 4, func(f []string) bool {
		g.Entries[f[0]] = true
		for _, list := range []string{f[2], f[3]} {
			if slices.Contains(strings.Split(list, ","), user) && !slices.Contains(g.Members, f[0]) {
				g.Members = append(g.Members, f[0])
			}
		}
		return true
	}); err != nil {
		return g, err
	}
	err := scan(d.Group, 4, func(f []string) bool {
		g.Groups[f[0]] = true
		g.Passwords = g.Passwords && f[1] == "x"
		return true
	})
	return g, err
}

// Member reports whether gshadow lists the user in group (always true
// without gshadow: nothing to keep in step).
func (g Gshadow) Member(group string) bool {
	return !g.Present || slices.Contains(g.Members, group)
}

// LacksGroup reports whether gshadow has no entry for a group that
// /etc/group has.
func (g Gshadow) LacksGroup(name string) bool {
	return g.Present && g.Groups[name] && !g.Entries[name]
}

// Orphan reports whether gshadow has an entry for name, a group /etc/group
// does not have, and alone whether grpconv would change nothing but
// remove it: every group has its entry and its password there ("x"), and
// name is the only entry without a group.
func (g Gshadow) Orphan(name string) (orphan, alone bool) {
	if !g.Present || !g.Entries[name] || g.Groups[name] {
		return false, false
	}
	orphans := 0
	for e := range g.Entries {
		if !g.Groups[e] {
			orphans++
		}
	}
	complete := g.Passwords
	for gr := range g.Groups {
		complete = complete && g.Entries[gr]
	}
	return true, orphans == 1 && complete
}
