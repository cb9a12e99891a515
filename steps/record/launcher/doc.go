// Package launcher builds generation-preparer.pyz (layout.HelperLauncherFile),
// the Python zip application through which the platform's node program runs
// the retained generation helper (CONTRACT §11):
//
//	python3 <node root>/generation-preparer.pyz --installation-id ID \
//	    --generation-action prepare|collect --generation N --specification-digest HEX
//
// The node program switches to multi-generation mode only when that file is
// a 0600 regular file beside provider.json. Its one module, __main__.py,
// replaces the Python process with <node root>/generation-preparer (the
// installer binary, layout.HelperFile) and the arguments it was given,
// unchanged: os.execv keeps the process id, its process group (the node
// program kills the group on cancel), the standard streams and so the exit
// status. The helper is found beside the archive, by the archive's own
// path, never through PATH or the working directory. Before the exec the
// launcher gives SIGPIPE and SIGXFSZ back their default action (Python
// ignores both, and an ignored signal stays ignored across exec), so the
// helper starts as it would if the node program ran it directly.
//
// Bytes returns the same bytes on every call and in every build (fixed
// names, times and order): the install step compares the retained file with
// them, and a registered node keeps the launcher it was installed with.
package launcher
