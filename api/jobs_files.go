package api

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"
	"go.uber.org/zap"

	"github.com/trainyard/trainyard/api/validate"
	"github.com/trainyard/trainyard/jobspec"
)

// FileStore holds files that accounts upload (SFT training data); the S3
// store implements it.
type FileStore interface {
	PutFile(ctx context.Context, accountID, name string, r io.Reader, size int64) error
	GetFile(ctx context.Context, accountID, name string) (io.ReadCloser, error)
	// HasFile reports whether the account uploaded a file under name.
	HasFile(ctx context.Context, accountID, name string) (bool, error)
}

// fileResponse answers an upload.
type fileResponse struct {
	URL     string `json:"url"`
	Entity  string `json:"entity"`
	Project string `json:"project"`
	Name    string `json:"name"`
	Version string `json:"version"`
	Bytes   int    `json:"bytes"`
	Lines   int    `json:"lines"`
}

// uploadFile is POST /v1/preview/files?project=P&name=N with JSONL training
// data as the body (one {"messages": [...], "tools": [...]} per line). The
// hosted service reads SFT data from W&B artifacts; trainyard keeps it
// itself: the answer's url, wandb-artifact:///ENTITY/P/N:v0, is the
// training_data_url of SFT jobs on the account's models. Uploads are
// immutable: a second upload under the same name is 409.
func (s *Server) uploadFile(c *gin.Context) {
	acct := accountOf(c)
	var errs validate.Errors
	q := c.Request.URL.Query()
	project, _ := errs.Query(q, "project").String(projectNameRules...)
	name, _ := errs.Query(q, "name").String(artifactNameRules...)
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	data, err := s.readBody(c)
	if err != nil {
		s.writeError(c, err)
		return
	}
	lines := checkJSONL(data, &errs)
	if err := errs.Err(); err != nil {
		s.writeError(c, err)
		return
	}
	ctx := c.Request.Context()
	key := jobspec.ArtifactFileName(project, name)
	url := jobspec.ArtifactURL(acct.Entity, project, name)
	switch exists, err := s.deps.Files.HasFile(ctx, acct.ID, key); {
	case err != nil:
		s.writeError(c, err)
		return
	case exists:
		s.writeDetail(c, http.StatusConflict, "Artifact '"+url+"' already exists; upload under a new name.")
		return
	}
	if err := s.deps.Files.PutFile(ctx, acct.ID, key, bytes.NewReader(data), int64(len(data))); err != nil {
		s.writeError(c, err)
		return
	}
	s.requestLog(c).Info("file uploaded", zap.String("url", url), zap.Int("bytes", len(data)))
	s.writeJSON(c, http.StatusOK, fileResponse{URL: url, Entity: acct.Entity, Project: project, Name: name,
		Version: "v0", Bytes: len(data), Lines: lines})
}

// checkJSONL checks that data holds at least one conversation and that every
// non-blank line is one training can use (jobspec.ParseSFTLine: shape,
// roles, an assistant turn, tool-call arguments), recording problems at
// ["body", line number]. Only the context length, which depends on the
// model, is left for the job that trains on the data.
func checkJSONL(data []byte, errs *validate.Errors) int {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	n := 0
	for lineNo := 1; sc.Scan(); lineNo++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		n++
		if err := checkLine(line); err != nil {
			errs.At(echoed(line), "body", lineNo).Invalid(fmt.Sprintf("line %d%v", lineNo, err))
		}
	}
	if n == 0 {
		errs.At(echoed(data), "body").Invalid("the file has no conversations")
	}
	return n
}

// echoed is the input a 422 echoes for a line (or file) of an upload: its text, cut at maxEchoed bytes (a
// line may be megabytes long; the client has it).
func echoed(b []byte) string {
	if len(b) > maxEchoed {
		return strings.ToValidUTF8(string(b[:maxEchoed]), "") + "…"
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// maxEchoed bounds the text a 422 on an upload echoes.
const maxEchoed = 1024

// checkLine checks one line of an upload as training will read it.
func checkLine(line []byte) error {
	_, err := jobspec.ParseSFTLine(line)
	return err
}
