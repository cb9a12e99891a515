package generation

import (
	"context"
	"errors"
	"os"

	"github.com/openagentcore/oac-node-install/journal"
	"github.com/openagentcore/oac-node-install/steps/noderoot"
	"github.com/openagentcore/oac-node-install/workflow"
)

// PrepareSteps binds the prepare workflow's steps to d.
func PrepareSteps(d noderoot.Data) map[workflow.State]workflow.Step {
	return map[workflow.State]workflow.Step{
		workflow.PrepareLock:        lockStep{d, noderoot.ActionPrepare},
		workflow.PrepareLease:       leaseStep{d},
		workflow.PreparePlan:        planStep{d},
		workflow.PrepareDownload:    downloadStep{d},
		workflow.PrepareImportStart: importStartStep{d},
		workflow.PrepareImport:      importStep{d},
		workflow.PreparePublish:     publishStep{d},
		workflow.PrepareClearPlan:   clearPlanStep{d},
	}
}

// RepairSteps binds the repair workflow's steps to d.
func RepairSteps(d noderoot.Data) map[workflow.State]workflow.Step {
	return map[workflow.State]workflow.Step{
		workflow.RepairLock:     lockStep{d, noderoot.ActionRepair},
		workflow.RepairVerify:   repairVerifyStep{d},
		workflow.RepairDownload: repairDownloadStep{d},
		workflow.RepairProbe:    repairProbeStep{d},
	}
}

// CollectSteps binds the collect workflow's steps to d.
func CollectSteps(d noderoot.Data) map[workflow.State]workflow.Step {
	return map[workflow.State]workflow.Step{
		workflow.CollectLock:           lockStep{d, noderoot.ActionCollect},
		workflow.CollectRecheck:        recheckStep{d},
		workflow.CollectCollecting:     collectingStep{d},
		workflow.CollectNative:         nativeStep{d},
		workflow.CollectNativeComplete: nativeCompleteStep{d},
		workflow.CollectReleaseFiles:   releaseFilesStep{d},
		workflow.CollectDropped:        droppedStep{d},
	}
}

// Run runs e's action for its generation: it takes the locks (Acquire),
// then runs the workflow against the generation's journal
// <root>/journals/<action>-<g>.journal, resuming an interrupted run, and
// releases the locks. A prepare or collect journal that already completed
// is left as it is and reported. A repair journal that completed is kept
// beside as <journal>.<n> and a new repair starts: repair runs again
// whenever the node finds files missing. Preparing the node's base
// generation (whose configuration is provider.json) succeeds without a run
// when its specification is the run's.
func Run(ctx context.Context, e *noderoot.Env) (*workflow.Report, error) {
	var def *workflow.Definition
	var steps map[workflow.State]workflow.Step
	switch e.Action() {
	case noderoot.ActionPrepare:
		def, steps = workflow.PrepareDefinition(), PrepareSteps(e)
	case noderoot.ActionRepair:
		def, steps = workflow.RepairDefinition(), RepairSteps(e)
	default:
		def, steps = workflow.CollectDefinition(), CollectSteps(e)
	}
	if err := e.Acquire(); err != nil {
		return nil, err
	}
	defer e.Unlock()
	id := e.Identity()
	if e.Action() == noderoot.ActionPrepare {
		if done, err := basePrepared(e); done || err != nil {
			return nil, err
		}
	}
	if err := noderoot.Mkdirs(e, "journals"); err != nil {
		return nil, err
	}
	path := e.Node().GenerationJournal(def.Name, id.Generation)
	if e.Action() == noderoot.ActionRepair {
		if err := keepCompleted(path); err != nil {
			return nil, err
		}
	}
	r := &workflow.Runner{
		Def:   def,
		Steps: steps,
		Binding: workflow.Binding{
			Version:             workflow.Version,
			InstallationID:      id.InstallationID.String(),
			Generation:          id.Generation,
			SpecificationDigest: id.SpecificationDigest,
		},
		Journal: path,
		Observe: func(p workflow.Progress) {
			switch p.Phase {
			case workflow.PhaseBegin, workflow.PhaseResumed:
				e.Logf("%s generation %d: %s (%s)", def.Name, id.Generation, p.Step, p.Doc)
			case workflow.PhaseFail:
				e.Logf("%s generation %d: %s failed", def.Name, id.Generation, p.Step)
			}
		},
	}
	return r.Run(ctx)
}

// basePrepared reports whether the run prepares the base generation, which
// the installation prepared: its provider.json must hold the run's
// specification.
func basePrepared(e *noderoot.Env) (bool, error) {
	base, err := e.Base()
	if err != nil || base.Generation != e.Identity().Generation {
		return false, err
	}
	if err := noderoot.CheckIdentity(e, base); err != nil {
		return true, noderoot.Refusal("", err)
	}
	e.Logf("generation %d is the node's base generation; provider.json is its configuration", base.Generation)
	return true, nil
}

// keepCompleted moves a completed journal aside to the first free
// <path>.<n> (never replacing one), so that the next run starts a new
// journal; the old one stays as a receipt.
func keepCompleted(path string) error {
	rep, err := workflow.InspectJournal(path, workflow.Lookup)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil || rep.Condition != workflow.Complete {
		return err
	}
	return journal.KeepAside(path)
}
