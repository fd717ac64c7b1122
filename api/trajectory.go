package api

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
)

// trajectoryGroups is a validated list of TrajectoryGroup: the typed groups
// and, for each trajectory, its JSON exactly as the client sent it.
type trajectoryGroups struct {
	Groups []trainyard.TrajectoryGroup
	Raw    [][]json.RawMessage // Raw[g][i] is trajectory i of group g
}

// Count returns the number of trajectories in all groups.
func (tg trajectoryGroups) Count() int {
	n := 0
	for _, g := range tg.Groups {
		n += len(g.Trajectories)
	}
	return n
}

// parseTrajectoryGroups validates n as the document's list[TrajectoryGroup]
// (used by the log route, and meant for the training-job route too),
// recording every problem; the result is complete only when no error was
// recorded. Numbers and booleans are coerced as pydantic's lax mode does,
// so the typed groups carry the coerced values while Raw keeps the bytes.
func parseTrajectoryGroups(n validate.Node) trajectoryGroups {
	items, _ := n.List()
	out := trajectoryGroups{
		Groups: make([]trainyard.TrajectoryGroup, 0, len(items)),
		Raw:    make([][]json.RawMessage, 0, len(items)),
	}
	for _, it := range items {
		g, ok := it.Model()
		if !ok {
			continue
		}
		trajs, _ := g.Field("trajectories").List()
		group := trainyard.TrajectoryGroup{Trajectories: make([]trainyard.Trajectory, 0, len(trajs))}
		raws := make([]json.RawMessage, 0, len(trajs))
		for _, tn := range trajs {
			if t, raw, ok := parseTrajectory(tn); ok {
				group.Trajectories = append(group.Trajectories, t)
				raws = append(raws, raw)
			}
		}
		out.Groups = append(out.Groups, group)
		out.Raw = append(out.Raw, raws)
	}
	return out
}

// parseTrajectory validates one Trajectory.
func parseTrajectory(n validate.Node) (trainyard.Trajectory, json.RawMessage, bool) {
	var t trainyard.Trajectory
	o, ok := n.Model()
	if !ok {
		return t, nil, false
	}
	t.MessagesAndChoices = parseMessages(o.Field("messages_and_choices"))
	t.Tools = parseTools(o.Field("tools"))
	hists, _ := o.Field("additional_histories").Optional().List()
	for _, hn := range hists {
		if h, ok := hn.Model(); ok {
			t.AdditionalHistories = append(t.AdditionalHistories, trainyard.History{
				MessagesAndChoices: parseMessages(h.Field("messages_and_choices")),
				Tools:              parseTools(h.Field("tools")),
			})
		}
	}
	t.Reward, _ = o.Field("reward").Float(validate.Ge(-trainyard.MaxAbsReward), validate.Le(trainyard.MaxAbsReward))
	t.InitialPolicyVersion = optionalInt(o.Field("initial_policy_version"))
	t.FinalPolicyVersion = optionalInt(o.Field("final_policy_version"))
	t.Metrics = scalarDict(o.Field("metrics"), false, validate.KindFloat, validate.KindInt, validate.KindBool)
	scalarDict(o.Field("auto_metrics"), false, validate.KindFloat, validate.KindInt, validate.KindBool)
	t.Metadata = scalarDict(o.Field("metadata"), true, validate.KindFloat, validate.KindInt, validate.KindStr, validate.KindBool)
	logs, _ := o.Field("logs").Optional().List()
	for _, ln := range logs {
		if s, ok := ln.String(); ok {
			t.Logs = append(t.Logs, s)
		}
	}
	checkDateTime(o.Field("start_time").Optional())
	return t, o.Raw(), true
}

// optionalInt reads an optional, nullable integer.
func optionalInt(n validate.Node) *int {
	if v, ok := n.Optional().Nullable().Int(); ok {
		return &v
	}
	return nil
}

// scalarDict validates an optional {str: scalar} object whose values are a
// union of kinds; with nullValues, null values are allowed (kept as nil).
func scalarDict(n validate.Node, nullValues bool, kinds ...validate.Kind) map[string]any {
	d, ok := n.Optional().Dict()
	if !ok {
		return nil
	}
	out := make(map[string]any, d.Object().Len())
	for _, e := range d.Entries() {
		if e.IsNull() && nullValues {
			out[e.Key()] = nil
			continue
		}
		if strings.ContainsRune(e.Key(), 0) {
			// Metrics end up in jsonb, which cannot hold NUL.
			e.Invalid("keys must not contain NUL characters")
			continue
		}
		if v, ok := e.AnyOf(kinds...); ok {
			out[e.Key()] = v
		}
	}
	return out
}

// dateTimeLayouts are the forms of start_time accepted, the common ISO 8601
// spellings pydantic parses.
var dateTimeLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02 15:04:05.999999999",
	"2006-01-02",
}

// checkDateTime validates a datetime: an ISO 8601 string or a Unix time.
func checkDateTime(n validate.Node) {
	if !n.Present() {
		return
	}
	switch v := n.Value().(type) {
	case validate.Number:
		return
	case string:
		for _, layout := range dateTimeLayouts {
			if _, err := time.Parse(layout, v); err == nil {
				return
			}
		}
		n.Fail("datetime_from_date_parsing", "Input should be a valid datetime or date, invalid format",
			map[string]any{"error": "invalid format"})
	default:
		n.Fail("datetime_type", "Input should be a valid datetime", nil)
	}
}
