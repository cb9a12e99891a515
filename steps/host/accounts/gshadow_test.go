package accounts

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// What a shadow-utils command cut off between its renames of /etc/group and
// /etc/gshadow leaves, as GshadowOf reads it.
func TestGshadowOf(t *testing.T) {
	for _, tc := range []struct {
		name           string
		group, gshadow string
		member         bool // gshadow lists oac-node in docker
		lacks          bool // gshadow lacks oac-node's own entry
		orphan, alone  bool
	}{
		{name: "consistent", group: "root:x:0:\ndocker:x:105:oac-node\noac-node:x:990:\n", gshadow: "root:*::\ndocker:!::oac-node\noac-node:!::\n", member: true},
		{name: "useradd cut before gshadow", group: "root:x:0:\ndocker:x:105:\noac-node:x:990:\n", gshadow: "root:*::\ndocker:!::\n", lacks: true},
		{name: "usermod cut before gshadow", group: "root:x:0:\ndocker:x:105:oac-node\noac-node:x:990:\n", gshadow: "root:*::\ndocker:!::\noac-node:!::\n"},
		{name: "userdel cut before gshadow", group: "root:x:0:\ndocker:x:105:\n", gshadow: "root:*::\ndocker:!::oac-node\noac-node:!::\n", member: true, orphan: true, alone: true},
		{name: "userdel cut, a password in group", group: "root:secret:0:\ndocker:x:105:\n", gshadow: "root:*::\ndocker:!::\noac-node:!::\n", orphan: true},
		{name: "userdel cut, another orphan", group: "root:x:0:\ndocker:x:105:\n", gshadow: "root:*::\ndocker:!::\nold:!::\noac-node:!::\n", orphan: true},
		{name: "administrator", group: "docker:x:105:\n", gshadow: "docker:!:oac-node:\n", member: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			etc := filepath.Join(root, "etc")
			os.MkdirAll(etc, 0o755)
			os.WriteFile(filepath.Join(etc, "passwd"), nil, 0o644)
			os.WriteFile(filepath.Join(etc, "group"), []byte(tc.group), 0o644)
			os.WriteFile(filepath.Join(etc, "gshadow"), []byte(tc.gshadow), 0o640)
			g, err := Under(root).GshadowOf("oac-node")
			if err != nil {
				t.Fatal(err)
			}
			orphan, alone := g.Orphan("oac-node")
			if slices.Contains(g.Members, "docker") != tc.member || g.LacksGroup("oac-node") != tc.lacks || orphan != tc.orphan || alone != tc.alone {
				t.Errorf("member %v lacks %v orphan %v alone %v, want %v %v %v %v", slices.Contains(g.Members, "docker"), g.LacksGroup("oac-node"), orphan, alone, tc.member, tc.lacks, tc.orphan, tc.alone)
			}
		})
	}
	// Without /etc/gshadow there is nothing to keep in step.
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "etc"), 0o755)
	os.WriteFile(filepath.Join(root, "etc", "group"), []byte("oac-node:x:990:\n"), 0o644)
	g, err := Under(root).GshadowOf("oac-node")
	if err != nil || g.Present || !g.Member("docker") || g.LacksGroup("oac-node") {
		t.Errorf("without gshadow: %+v, %v", g, err)
	}
}
