package trainyard

// Sort orders accepted by list endpoints.
const (
	OrderAsc  = "asc"
	OrderDesc = "desc"
)

// Paging limits shared by every list endpoint (the hosted API's values).
const (
	DefaultPageLimit = 20
	MaxPageLimit     = 100
)

// ListOptions selects one page of a cursor-paginated list. After is the id of
// the last item of the previous page (exclusive); empty means from the start.
type ListOptions struct {
	After string
	Limit int
	Order string // OrderAsc or OrderDesc; empty means the list's natural order
}

// Page is one page of results. HasMore reports whether items follow the last
// one in the requested order.
type Page[T any] struct {
	Items   []T
	HasMore bool
}
