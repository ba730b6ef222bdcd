package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
)

// HelperFunc is a hidden mode of the agent binary: an experiment that needs
// a separate process with its own limits or credentials (memlock drops
// CAP_IPC_LOCK) re-executes the agent with EnvHelper set to the helper's
// name. The helper reads its input from in and writes its answer to out.
type HelperFunc func(ctx context.Context, in io.Reader, out io.Writer) error

// ErrUnknownExperiment is a request for an experiment the registry does
// not hold.
var ErrUnknownExperiment = errors.New("unknown experiment")

// Registry is the set of experiments this binary can run. Experiments are
// registered once at startup (hostexp.Register, rdmaexp.Register) and the
// registry is read-only afterwards, but it is safe for concurrent use.
type Registry struct {
	mu      sync.RWMutex
	exps    map[string]*Experiment
	helpers map[string]HelperFunc
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{exps: map[string]*Experiment{}, helpers: map[string]HelperFunc{}}
}

// Register adds an experiment. A duplicate id or a definition whose own
// defaults or presets do not validate is a programming error, so it panics
// at startup rather than surfacing as a learner's 400 later.
func (r *Registry) Register(e *Experiment) {
	if e == nil || e.ID == "" {
		panic("sandbox: Register of an experiment without id")
	}
	if e.Run == nil {
		panic(fmt.Sprintf("sandbox: experiment %q has no Run", e.ID))
	}
	if err := e.checkDefinition(); err != nil {
		panic(fmt.Sprintf("sandbox: experiment %q: %v", e.ID, err))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.exps[e.ID]; dup {
		panic(fmt.Sprintf("sandbox: experiment %q registered twice", e.ID))
	}
	r.exps[e.ID] = e
}

// Get returns the experiment with that id, or nil.
func (r *Registry) Get(id string) *Experiment {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.exps[id]
}

// List returns every experiment, sorted by id.
func (r *Registry) List() []*Experiment {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]*Experiment, 0, len(r.exps))
	for _, e := range r.exps {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// RegisterHelper adds a hidden agent mode (see HelperFunc). Names are
// unique; a duplicate panics.
func (r *Registry) RegisterHelper(name string, fn HelperFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.helpers[name]; dup {
		panic(fmt.Sprintf("sandbox: helper %q registered twice", name))
	}
	r.helpers[name] = fn
}

func (r *Registry) helper(name string) HelperFunc {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.helpers[name]
}

// CheckParams validates a lesson directive's experiment reference
// (`::experiment ID key=value…`): the id must be registered and the values
// must be valid params. It fits lessons.Options.CheckExperiment.
func (r *Registry) CheckParams(id string, params map[string]string) error {
	e := r.Get(id)
	if e == nil {
		ids := make([]string, 0, len(r.List()))
		for _, x := range r.List() {
			ids = append(ids, x.ID)
		}
		sort.Strings(ids)
		return fmt.Errorf("%w %q (known: %s)", ErrUnknownExperiment, id, strings.Join(ids, ", "))
	}
	raw := make(map[string]any, len(params))
	for k, v := range params {
		raw[k] = v
	}
	// A lesson writes booleans as the authoring guide says: true or false
	// (the forms' and the API's other spellings are not for lesson files).
	for _, p := range e.Params {
		if v, ok := params[p.Name]; ok && p.Kind == ParamBool && v != "true" && v != "false" {
			return &ParamError{Param: p.Name, Message: fmt.Sprintf("write true or false (got %q)", v)}
		}
	}
	_, err := e.Validate(raw)
	return err
}
