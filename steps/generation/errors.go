package generation

import "errors"

// ErrNotLocked: a step ran without the installation lock or the
// generation's exclusive lease held by this process.
var ErrNotLocked = errors.New("the installation lock and the generation's lease are not held")

// ErrPlanDrift: an existing preparation plan or final configuration is not
// the one this preparation computes.
var ErrPlanDrift = errors.New("preparation plan drifted")

// ErrNoConfiguration: repair found neither the generation's final
// configuration nor an exact preparation plan; it never reconstructs one.
var ErrNoConfiguration = errors.New("no provider configuration and no exact preparation plan")

// ErrNotReady: the provider's readiness probe failed after repair.
var ErrNotReady = errors.New("provider is not ready for the generation")

// ErrNativeKept: microsandbox native removal could not be completed (an
// inventory failed or was malformed, the store is in use or not provably
// this installation's, or the native executable is missing). Every byte
// was kept and native_complete stays false.
var ErrNativeKept = errors.New("native removal kept every byte")

// ErrBaseGeneration: the action does not apply to the node's base
// generation in that way (its configuration is provider.json).
var ErrBaseGeneration = errors.New("base generation")
