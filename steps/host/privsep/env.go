package privsep

import "github.com/openagentcore/oac-node-install/steps/record/proxy"

// AccountName is the service account every child runs as.
const AccountName = "oac-node"

// DockerConfigDir is the empty root-owned Docker client configuration
// directory the child uses, so that no credential helper or configuration of
// another account is ever read.
const DockerConfigDir = "/run/oac-node-docker"

// childPath is the child's PATH, the same fixed list the installer sets for
// itself at start.
const childPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ChildEnv is the complete environment of a child whose home is home:
// HOME, USER, LOGNAME, PATH, LANG and DOCKER_CONFIG with fixed values, then
// the normalized proxy variables (proxy.Env.Normalized). Nothing else of the
// parent's environment reaches the child.
func ChildEnv(home string, p proxy.Env) []string {
	env := []string{
		"HOME=" + home,
		"USER=" + AccountName,
		"LOGNAME=" + AccountName,
		"PATH=" + childPath,
		"LANG=C.UTF-8",
		"DOCKER_CONFIG=" + DockerConfigDir,
	}
	return append(env, p.Normalized()...)
}
