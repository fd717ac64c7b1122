package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/trainyard/trainyard"
)

// PostgreSQL SQLSTATE codes that map onto trainyard error codes.
const (
	pgUniqueViolation     = "23505"
	pgForeignKeyViolation = "23503"
	pgCheckViolation      = "23514"
	pgNotNullViolation    = "23502"
	pgInvalidText         = "22P02"
	pgBadEncoding         = "22021" // e.g. a NUL byte in text
	pgUntranslatable      = "22P05" // e.g. \u0000 in jsonb
	pgOutOfRange          = "22003"
)

// translate turns a driver error into a trainyard error: a missing row is
// ENOTFOUND, a unique violation ECONFLICT, a missing parent row (foreign key)
// ENOTFOUND, a violated constraint EINVALID, an unreachable server
// EUNAVAILABLE. Context errors and anything else stay wrapped as they are, so
// errors.Is(err, context.Canceled) keeps working. subject names what was
// touched ("model 0190..."); it becomes part of the client-safe message.
func translate(err error, subject string, args ...any) error {
	if err == nil {
		return nil
	}
	subj := fmt.Sprintf(subject, args...)
	if errors.Is(err, errOpTimeout) {
		return trainyard.WrapError(trainyard.EUNAVAILABLE, err, "%s: the database did not answer in time", subj)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%s: %w", subj, err)
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return trainyard.WrapError(trainyard.ENOTFOUND, err, "%s not found", subj)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case pgUniqueViolation:
			return trainyard.WrapError(trainyard.ECONFLICT, err, "%s already exists", subj)
		case pgForeignKeyViolation:
			return trainyard.WrapError(trainyard.ENOTFOUND, err, "%s: the %s it refers to was not found", subj, referenced(pgErr))
		case pgCheckViolation, pgNotNullViolation, pgInvalidText, pgBadEncoding, pgUntranslatable, pgOutOfRange:
			return trainyard.WrapError(trainyard.EINVALID, err, "%s: invalid value (%s)", subj, pgErr.Message)
		}
		if unavailableState(pgErr.Code) {
			return trainyard.WrapError(trainyard.EUNAVAILABLE, err, "%s: database unavailable", subj)
		}
		return fmt.Errorf("%s: %w", subj, err)
	}
	var connErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connErr) || errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		// Refused, reset or cut connections: the server went away.
		return trainyard.WrapError(trainyard.EUNAVAILABLE, err, "%s: database unavailable", subj)
	}
	return fmt.Errorf("%s: %w", subj, err)
}

// unavailableState reports whether a SQLSTATE says the server cannot serve
// now rather than that the statement is wrong: connection exceptions (class
// 08), shutdowns and restarts (57P01-57P03), too many connections (53300).
func unavailableState(code string) bool {
	switch {
	case strings.HasPrefix(code, "08"), code == "57P01", code == "57P02", code == "57P03", code == "53300":
		return true
	}
	return false
}

// violates reports whether err is a violation of the named constraint or
// unique index.
func violates(err error, constraint string) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.ConstraintName == constraint
}

// referenced names the parent of a violated foreign key from the
// constraint's name (<table>_<column>_fkey, as PostgreSQL names them).
func referenced(e *pgconn.PgError) string {
	switch {
	case strings.HasSuffix(e.ConstraintName, "_account_id_fkey"):
		return "account"
	case strings.HasSuffix(e.ConstraintName, "_model_id_fkey"):
		return "model"
	case strings.HasSuffix(e.ConstraintName, "_job_id_fkey"):
		return "job"
	case strings.HasSuffix(e.ConstraintName, "_log_id_fkey"):
		return "log record"
	}
	return "row"
}

// parseID returns the canonical form of a UUID id, or ENOTFOUND naming kind
// when s is not a UUID: an id that cannot exist is simply not found.
func parseID(kind, s string) (string, error) {
	u, err := uuid.Parse(s)
	if err != nil {
		return "", trainyard.Errorf(trainyard.ENOTFOUND, "%s %q not found", kind, s)
	}
	return u.String(), nil
}

// parseCursor returns the canonical form of an `after` cursor id; a cursor
// that is not a UUID is EINVALID.
func parseCursor(s string) (string, error) {
	u, err := uuid.Parse(s)
	if err != nil {
		return "", trainyard.Errorf(trainyard.EINVALID, "invalid cursor %q: not an id", s)
	}
	return u.String(), nil
}

// idOrNew returns the canonical form of a caller-chosen id of a new row, or
// a fresh id when none was chosen; a chosen id that is not a UUID is
// EINVALID.
func idOrNew(kind, id string) (string, error) {
	if id == "" {
		return newID()
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return "", trainyard.Errorf(trainyard.EINVALID, "%s id %q is not a UUID", kind, id)
	}
	return u.String(), nil
}

// newID returns a fresh UUIDv7, whose time-ordered bits make ids sort by
// creation time.
func newID() (string, error) {
	u, err := uuid.NewV7()
	if err != nil {
		return "", fmt.Errorf("generate id: %w", err)
	}
	return u.String(), nil
}
