package workflow

// Definitions returns the five workflows in a fixed order.
func Definitions() []*Definition {
	return []*Definition{
		InstallDefinition(),
		PrepareDefinition(),
		RepairDefinition(),
		CollectDefinition(),
		UninstallDefinition(),
	}
}

// Lookup returns the workflow definition with the given name.
func Lookup(name string) (*Definition, bool) {
	for _, d := range Definitions() {
		if d.Name == name {
			return d, true
		}
	}
	return nil, false
}
