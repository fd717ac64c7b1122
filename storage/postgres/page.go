package postgres

import (
	"encoding/json"
	"math"

	"github.com/trainyard/trainyard"
)

// pageSpec is a validated ListOptions: the row limit and the direction.
type pageSpec struct {
	limit int
	desc  bool
}

// pageOf applies the paging defaults to opts: a limit below 1 means the
// default, one above the maximum is clamped (rejecting it is the API's job),
// and an empty order means the list's natural order.
func pageOf(opts trainyard.ListOptions, naturalDesc bool) (pageSpec, error) {
	p := pageSpec{limit: opts.Limit, desc: naturalDesc}
	if p.limit < 1 {
		p.limit = trainyard.DefaultPageLimit
	}
	if p.limit > trainyard.MaxPageLimit {
		p.limit = trainyard.MaxPageLimit
	}
	switch opts.Order {
	case "":
	case trainyard.OrderAsc:
		p.desc = false
	case trainyard.OrderDesc:
		p.desc = true
	default:
		return p, trainyard.Errorf(trainyard.EINVALID, "invalid order %q: use %q or %q", opts.Order, trainyard.OrderAsc, trainyard.OrderDesc)
	}
	return p, nil
}

// page cuts the limit+1 rows a list query fetched down to one page; the
// extra row only says that more follow.
func page[T any](items []T, limit int) *trainyard.Page[T] {
	if items == nil {
		items = []T{}
	}
	if len(items) > limit {
		return &trainyard.Page[T]{Items: items[:limit], HasMore: true}
	}
	return &trainyard.Page[T]{Items: items}
}

// encodeMetrics encodes a metrics map as a JSON object ({} for nil). JSON has
// no NaN or infinity, so such a value is EINVALID rather than a driver error.
func encodeMetrics(m map[string]float64) ([]byte, error) {
	for k, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, trainyard.Errorf(trainyard.EINVALID, "metric %q is %v; metrics must be finite numbers", k, v)
		}
	}
	if m == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(m)
}
