package activities

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/engine"
	"github.com/trainyard/trainyard/jobspec"
)

// rlInput is the part of the stored RL request that training reads.
type rlInput struct {
	TrajectoryGroups []trainyard.TrajectoryGroup `json:"trajectory_groups"`
}

// prepareRL reads the job's trajectory groups and plans one gradient step
// from them (buildRLPlan).
func (a *Activities) prepareRL(ctx context.Context, job *trainyard.Job, cfg jobspec.JobConfig, base *engine.Base) (*plan, int, error) {
	settings, errs := jobspec.ParseRLConfig(cfg.ExperimentalConfig)
	if len(errs) > 0 {
		return nil, 0, invalidf("experimental_config: %s", describe(errs))
	}
	rc, err := a.d.Blobs.GetJobInput(ctx, job.ID, jobspec.InputFile)
	if err != nil {
		return nil, 0, classify(err, "open the job's trajectory groups")
	}
	defer rc.Close()
	raw, err := a.readLimited(rc, "the job's trajectory groups")
	if err != nil {
		return nil, 0, err
	}
	var in rlInput
	if err := json.Unmarshal(raw, &in); err != nil {
		return nil, 0, invalidf("the job's trajectory groups cannot be decoded: %v", err)
	}
	p, n, err := buildRLPlan(base, in.TrajectoryGroups, settings)
	if err != nil {
		return nil, 0, invalidf("%v", err)
	}
	return p, n, nil
}

// CheckRLJob runs on an RL job's input every check that preparing it on base
// will run (settings, rewards, rendering, context length), so the API
// accepts exactly the jobs that train. The error is written for the user.
func CheckRLJob(base *engine.Base, groups []trainyard.TrajectoryGroup, experimental json.RawMessage) error {
	settings, errs := jobspec.ParseRLConfig(experimental)
	if len(errs) > 0 {
		return fmt.Errorf("experimental_config: %s", describe(errs))
	}
	_, _, err := buildRLPlan(base, groups, settings)
	return err
}

// TrajectoryError is a problem with one trajectory of an RL job: its Field ("" for the trajectory as a
// whole), or its additional history History (-1: the trajectory's own messages). The request's validation
// reports it at that place, with the value sent.
type TrajectoryError struct {
	Group, Trajectory, History int
	Field                      string
	Err                        error
}

func (e *TrajectoryError) Error() string {
	where := fmt.Sprintf("trajectory_groups[%d].trajectories[%d]", e.Group, e.Trajectory)
	if e.History >= 0 {
		where += fmt.Sprintf(".additional_histories[%d]", e.History)
	}
	if e.Field != "" {
		return where + "." + e.Field + " " + e.Err.Error()
	}
	return where + ": " + e.Err.Error()
}

func (e *TrajectoryError) Unwrap() error { return e.Err }

// buildRLPlan turns trajectory groups into one gradient step:
// group-relative advantages, then one sequence per trajectory and per
// additional history, trained with the trajectory's advantage. Trajectories
// whose advantage is zero (groups whose rewards are all equal) carry no
// signal and are left out, unless a KL penalty gives every sequence a
// gradient. Errors are the user's, in plain words.
func buildRLPlan(base *engine.Base, groups []trainyard.TrajectoryGroup, settings jobspec.RLSettings) (*plan, int, error) {
	if len(groups) == 0 {
		return nil, 0, fmt.Errorf("trajectory_groups is empty: there is nothing to train on")
	}
	rewards := make([][]float64, len(groups))
	for gi, g := range groups {
		for ti, t := range g.Trajectories {
			if !finite(t.Reward) {
				return nil, 0, &TrajectoryError{Group: gi, Trajectory: ti, History: -1, Field: "reward",
					Err: errors.New("is not a finite number")}
			}
			rewards[gi] = append(rewards[gi], t.Reward)
		}
	}
	adv := engine.Advantages(rewards, settings.ScaleRewards, settings.AdvantageBalance)
	stop := stopTokens(base)
	p := &plan{RL: engine.RLConfig{
		LossFn: settings.LossFn, Epsilon: float32(settings.Epsilon), EpsilonHigh: float32(settings.EpsilonHigh),
		ImportanceSamplingLevel: settings.ImportanceSamplingLevel, KLPenaltyCoef: float32(settings.KLPenaltyCoef),
	}, PrecalculateLogprobs: settings.PrecalculateLogprobs}
	trainableGroups := 0
	for gi, g := range groups {
		signal := false
		for ti, t := range g.Trajectories {
			if adv[gi][ti] == 0 && settings.KLPenaltyCoef == 0 {
				continue
			}
			signal = signal || adv[gi][ti] != 0
			histories := append([]trainyard.History{{MessagesAndChoices: t.MessagesAndChoices, Tools: t.Tools}}, t.AdditionalHistories...)
			for hi, h := range histories {
				seq, ok, err := renderHistory(base, h, stop)
				if err != nil {
					return nil, 0, &TrajectoryError{Group: gi, Trajectory: ti, History: hi - 1, Err: err}
				}
				if ok {
					p.Samples = append(p.Samples, engine.RLSample{Sequence: seq, Advantage: float32(adv[gi][ti])})
				}
			}
		}
		if signal {
			trainableGroups++
		}
	}

	metrics := map[string]float64{}
	for k, v := range trainyard.LogMetrics("train", groups) {
		metrics[strings.TrimPrefix(k, "train/")] = v
	}
	metrics["num_trainable_groups"] = float64(trainableGroups)
	metrics["num_training_sequences"] = float64(len(p.Samples))
	lr := settings.LearningRate
	if lr == 0 {
		lr = defaultLearningRate(base, trainyard.JobKindRL)
	}
	if settings.LRTrajectoryPower != 0 {
		lr *= math.Pow(metrics["num_trajectories"], settings.LRTrajectoryPower)
	}
	if settings.LRByRewardStd {
		lr *= metrics["reward_std_dev"]
	}
	// Finite but huge rewards or metrics (say ±1e308) overflow their mean,
	// standard deviation or the advantages: say so now rather than fail
	// later on a NaN advantage or an event that cannot be stored.
	if k, v, bad := trainyard.FirstNonFinite(metrics); bad {
		return nil, 0, fmt.Errorf("the trajectory groups' %s is %v: rewards or metrics are too large to average; keep them well inside ±1e300", k, v)
	}
	for gi := range adv {
		for ti, v := range adv[gi] {
			if !finite(v) {
				return nil, 0, &TrajectoryError{Group: gi, Trajectory: ti, History: -1, Field: "reward",
					Err: fmt.Errorf("gives an advantage of %v: rewards are too large to normalise; keep them well inside ±1e300", v)}
			}
		}
	}
	if !finite(lr) {
		return nil, 0, fmt.Errorf("the learning rate after scaling is %v; check the learning rate multipliers", lr)
	}
	// The multipliers depend on the data; whatever they make of the rate,
	// it stays in the range a client may ask for directly.
	lr = min(lr, jobspec.MaxLearningRate)
	batch := make([]int, len(p.Samples))
	for i := range batch {
		batch[i] = i
	}
	p.Steps = []planStep{{Batch: batch, LearningRate: float32(lr), Metrics: metrics}}
	return p, len(p.Samples), nil
}

// renderHistory renders one conversation of a trajectory; ok is false when
// it has no Choice (nothing to train on).
func renderHistory(base *engine.Base, h trainyard.History, stop map[int]bool) (engine.Sequence, bool, error) {
	msgs, choices, err := trajectoryMessages(h.MessagesAndChoices, stop)
	if err != nil {
		return engine.Sequence{}, false, err
	}
	if choices == 0 {
		return engine.Sequence{}, false, nil
	}
	seq, err := render(base, msgs, engineTools(h.Tools))
	return seq, err == nil, err
}

// render renders a training sequence and checks it fits the context.
func render(base *engine.Base, msgs []engine.Message, tools []engine.Tool) (engine.Sequence, error) {
	seq, err := base.RenderTraining(msgs, tools)
	if err != nil {
		return seq, err
	}
	if n, max := len(seq.Tokens), base.ContextLength(); n > max {
		return seq, fmt.Errorf("the conversation is %d tokens long, more than the model's context of %d", n, max)
	}
	for _, id := range seq.Tokens {
		if id < 0 || id >= base.VocabSize() {
			return seq, fmt.Errorf("token id %d is outside the model's vocabulary of %d", id, base.VocabSize())
		}
	}
	return seq, nil
}

// finite reports whether f is neither NaN nor infinite.
func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// describe joins field errors into one message.
func describe(errs []jobspec.FieldError) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		loc := make([]string, len(e.Loc))
		for j, l := range e.Loc {
			loc[j] = fmt.Sprint(l)
		}
		parts[i] = strings.Join(loc, ".") + " " + e.Msg
	}
	return strings.Join(parts, "; ")
}
