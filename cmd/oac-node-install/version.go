package main

import "github.com/openagentcore/oac-node-install/workflow"

func versionString() string { return "oac-node-install " + workflow.Version }
