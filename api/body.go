package api

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/trainyard/trainyard"
	"github.com/trainyard/trainyard/api/validate"
)

// errUnreadableBody is FastAPI's answer to a body it cannot read as text.
var errUnreadableBody = trainyard.Errorf(trainyard.EBADREQUEST, "There was an error parsing the body")

// readBody reads the whole request body, refusing more than
// Config.MaxBodyBytes with ETOOLARGE (413) before or while reading. The
// buffer grows with the bytes that arrive, never with the Content-Length a
// client declares, and the read has Config.BodyTimeout to finish, so sockets
// that promise much and send little cost almost nothing.
func (s *Server) readBody(c *gin.Context) ([]byte, error) {
	limit := s.cfg.MaxBodyBytes
	tooLarge := trainyard.Errorf(trainyard.ETOOLARGE, "Request body too large: the limit is %d bytes.", limit)
	if c.Request.ContentLength > limit {
		return nil, tooLarge
	}
	rc := http.NewResponseController(c.Writer)
	_ = rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout))
	var buf bytes.Buffer
	_, err := buf.ReadFrom(http.MaxBytesReader(c.Writer, c.Request.Body, limit))
	if err == nil {
		// Once the body is in, the server watches the connection for a
		// hang-up; a deadline left in place would end that watch and
		// cancel the request while its handler still works. A body that
		// did not arrive keeps its deadline, so the server, which would
		// otherwise read the rest before answering, gives up at once and
		// closes the connection after the answer.
		_ = rc.SetReadDeadline(time.Time{})
	}
	var mbe *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &mbe):
		return nil, tooLarge
	case errors.As(err, &ne) && ne.Timeout():
		// Checked before the context: the server cancels it on any read
		// error, a timeout included, but this client is still there.
		return nil, trainyard.WrapError(trainyard.ETIMEOUT, err, "The request body did not arrive within %s.", s.cfg.BodyTimeout)
	case err != nil && c.Request.Context().Err() != nil:
		return nil, fmt.Errorf("read body: %w", c.Request.Context().Err())
	case err != nil && !errors.Is(err, io.EOF):
		return nil, trainyard.WrapError(trainyard.EBADREQUEST, err, "There was an error parsing the body")
	}
	return buf.Bytes(), nil
}

// decodeBody reads and parses the JSON body and returns its node at
// ["body"]. Like FastAPI, an empty body is an absent one (its check reports
// "Field required" at ["body"]), malformed JSON is a 422 json_invalid at
// ["body", position], and a body that is not UTF-8 text is a 400. The
// returned bytes back the raw spans of decoded objects.
func (s *Server) decodeBody(c *gin.Context, errs *validate.Errors) (validate.Node, error) {
	n, _, err := s.decodeBodyRaw(c, errs)
	return n, err
}

// decodeBodyRaw is decodeBody that also returns the body's bytes.
func (s *Server) decodeBodyRaw(c *gin.Context, errs *validate.Errors) (validate.Node, []byte, error) {
	raw, err := s.readBody(c)
	if err != nil {
		return validate.Node{}, nil, err
	}
	n, err := decodeRaw(raw, errs)
	return n, raw, err
}

func decodeRaw(raw []byte, errs *validate.Errors) (validate.Node, error) {
	if len(raw) == 0 {
		return errs.Absent(nil, "body"), nil
	}
	v, err := validate.Decode(raw)
	var se *validate.SyntaxError
	switch {
	case errors.As(err, &se):
		return validate.Node{}, validate.FromDecodeError(se)
	case errors.Is(err, validate.ErrEncoding):
		return validate.Node{}, errUnreadableBody
	case err != nil:
		return validate.Node{}, fmt.Errorf("decode body: %w", err)
	}
	if v == nil {
		// FastAPI treats a JSON null body as no body at all.
		return errs.Absent(nil, "body"), nil
	}
	return errs.At(v, "body"), nil
}

// pathUUID validates the path parameter name as a UUID at ["path", name]
// and returns its canonical form ("" after recording an error).
func pathUUID(c *gin.Context, errs *validate.Errors, name string) string {
	id, _ := errs.At(c.Param(name), "path", name).UUID()
	return id
}
