package workflows

import (
	"encoding/json"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/activities"
	"github.com/trainyard/trainyard/engine"
)

// TrajectoryError is CheckRLJob's error about one trajectory (activities.TrajectoryError).
type TrajectoryError = activities.TrajectoryError

// CheckRLJob runs every check that preparing an RL job on base will run on
// its input; the error is written for the user. (The checks that need no
// model are jobspec's, which the API calls directly.)
func CheckRLJob(base *engine.Base, groups []trainyard.TrajectoryGroup, experimental json.RawMessage) error {
	return activities.CheckRLJob(base, groups, experimental)
}
