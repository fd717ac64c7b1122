package postgres

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/jackc/pgx/v5"

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

// keyset returns, for p's direction, the comparison that continues a list
// after its cursor's sort key and the ORDER BY direction. Lists splice them
// into their query: they are fixed SQL words, never client input.
func (p pageSpec) keyset() (cmp, dir string) {
	if p.desc {
		return "<", "DESC"
	}
	return ">", "ASC"
}

// queryPage runs a list query and returns one page of its rows. The query's
// last parameter is the row limit, which queryPage appends to args: it asks
// for one row more than a page, to learn whether more follow. subject names
// the list in errors ("events of job 0190...").
func queryPage[T any](ctx context.Context, db *DB, p pageSpec, scan pgx.RowToFunc[T], subject, query string, args ...any) (*trainyard.Page[T], error) {
	rows, err := db.pool.Query(ctx, query, append(args, p.limit+1)...)
	if err != nil {
		return nil, translate(err, "%s", subject)
	}
	items, err := pgx.CollectRows(rows, scan)
	if err != nil {
		return nil, translate(err, "%s", subject)
	}
	return page(items, p.limit), nil
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
	if k, v, bad := trainyard.FirstNonFinite(m); bad {
		return nil, trainyard.Errorf(trainyard.EINVALID, "metric %q is %v; metrics must be finite numbers", k, v)
	}
	if m == nil {
		return []byte("{}"), nil
	}
	return json.Marshal(m)
}

// optionalCursor parses an `after` cursor of a list ordered by id, nil when
// empty. Since ids order such a list, the cursor row need not still exist.
func optionalCursor(s string) (*string, error) {
	if s == "" {
		return nil, nil
	}
	c, err := parseCursor(s)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// cursorKey resolves an `after` cursor (an id; empty: nil) to the sort key of
// its row with query, which takes the cursor and the parent id. A cursor that
// is not an id of this list is EINVALID: a client passing a stale or foreign
// cursor gets a clear message instead of a silently wrong page.
func cursorKey(ctx context.Context, db *DB, query, cursor, parent, what string) (*int, error) {
	if cursor == "" {
		return nil, nil
	}
	id, err := parseCursor(cursor)
	if err != nil {
		return nil, err
	}
	var key int
	err = db.pool.QueryRow(ctx, query, id, parent).Scan(&key)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, trainyard.Errorf(trainyard.EINVALID, "invalid cursor: after=%s is not a %s", cursor, what)
	}
	if err != nil {
		return nil, translate(err, "cursor %s", cursor)
	}
	return &key, nil
}
