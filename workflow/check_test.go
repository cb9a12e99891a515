package workflow

import (
	"context"
	"errors"
	"testing"
)

// checkStep is a step with a Checker answering out, res and err.
type checkStep struct {
	out Outcome
	res Result
	err error
	saw *[]Facts
}

func (s checkStep) Run(context.Context, Facts) (Result, error) { panic("Check must not run a step") }

func (s checkStep) Check(_ context.Context, f Facts) (Outcome, Result, error) {
	*s.saw = append(*s.saw, f)
	return s.out, s.res, s.err
}

func checkDefinition() *Definition {
	return &Definition{Name: "t", Final: "end", States: []StateDef{
		{Name: "a", Policy: Rerun, On: []Transition{{"next", "b"}, {"skip", "c"}}},
		{Name: "b", Policy: Rerun, On: []Transition{{"next", "c"}}},
		{Name: "c", Policy: Rerun, On: []Transition{{"next", "end"}}},
	}}
}

func TestCheckWalksEveryStepAndWritesNothing(t *testing.T) {
	var saw []Facts
	steps := map[State]Step{
		"a": checkStep{out: Done, res: Result{Facts: map[string]string{"x": "1"}}, saw: &saw},
		"b": checkStep{out: NotDone, res: Result{Facts: map[string]string{"y": "2"}}, saw: &saw},
		"c": checkStep{out: Done, saw: &saw},
	}
	rep, err := Check(context.Background(), checkDefinition(), steps)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Satisfied || len(rep.Unsatisfied) != 1 || rep.Unsatisfied[0] != "b" || len(saw) != 3 {
		t.Fatalf("report %+v, %d checks", rep, len(saw))
	}
	if saw[2]["x"] != "1" || saw[2]["y"] != "" {
		t.Errorf("c saw %v: a done step's facts, not a step's that is not done", saw[2])
	}

	// An event is followed; all done is satisfied.
	saw = nil
	steps["a"] = checkStep{out: Done, res: Result{Event: "skip"}, saw: &saw}
	if rep, err := Check(context.Background(), checkDefinition(), steps); err != nil || !rep.Satisfied || len(saw) != 2 {
		t.Errorf("with the skip event: %+v %v, %d checks", rep, err, len(saw))
	}

	// A step's error stops the walk, named by the step.
	saw = nil
	refused := Unchanged(errors.New("refused"))
	steps["a"] = checkStep{out: Done, saw: &saw}
	steps["b"] = checkStep{err: refused, saw: &saw}
	_, err = Check(context.Background(), checkDefinition(), steps)
	var ce *CheckError
	if !errors.As(err, &ce) || ce.Step != "b" || !IsUnchanged(err) || len(saw) != 2 {
		t.Errorf("error %v (%d checks)", err, len(saw))
	}

	// A step without a Checker is not done.
	saw = nil
	steps["b"] = StepFunc(func(context.Context, Facts) (Result, error) { panic("run") })
	if rep, err := Check(context.Background(), checkDefinition(), steps); err != nil || rep.Satisfied {
		t.Errorf("without a Checker: %+v %v", rep, err)
	}
}
