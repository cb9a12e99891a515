package workflow

// Version is the binary's version, bound into every journal header. Release
// builds set it with -ldflags "-X .../workflow.Version=<version>".
var Version = "dev"
