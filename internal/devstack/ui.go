package devstack

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	uiserver "github.com/temporalio/ui-server/v2/server"
	uiconfig "github.com/temporalio/ui-server/v2/server/config"
	uioptions "github.com/temporalio/ui-server/v2/server/server_options"
)

// uiServer is the Temporal Web UI served from the assets embedded in the
// ui-server module, so it works offline.
type uiServer struct {
	server *uiserver.Server
	done   chan error
}

// startUI starts the Web UI on cfg.UIAddr, proxying to the frontend, and
// waits until its health route answers.
func startUI(ctx context.Context, cfg Config) (*uiServer, error) {
	host, port := splitHostPort(cfg.UIAddr)
	srv := uiserver.NewServer(uioptions.WithConfigProvider(&uiconfig.Config{
		Host:                host,
		Port:                port,
		TemporalGRPCAddress: cfg.FrontendAddr,
		EnableUI:            true,
		DefaultNamespace:    cfg.Namespace,
		// Served over plain HTTP on loopback: a Secure cookie would never
		// be sent back and every write action would fail the CSRF check.
		CORS:             uiconfig.CORS{CookieInsecure: true},
		HideLogs:         true,
		DisableNewsFetch: true,
	}))
	u := &uiServer{server: srv, done: make(chan error, 1)}
	// Start blocks until Stop, so it runs in the background; its outcome is
	// reported on done in case it fails before the UI answers.
	go func() { u.done <- srv.Start() }()
	if err := u.waitReady(ctx, "http://"+cfg.UIAddr+"/healthz"); err != nil {
		srv.Stop()
		return nil, err
	}
	return u, nil
}

func (u *uiServer) waitReady(ctx context.Context, url string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	var last error
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("devstack: ui health request: %w", err)
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("status %s", resp.Status)
		}
		last = err
		select {
		case err := <-u.done:
			return fmt.Errorf("devstack: ui server exited: %w", err)
		case <-ctx.Done():
			return fmt.Errorf("devstack: ui not ready at %s: %w", url, errors.Join(ctx.Err(), last))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (u *uiServer) close() error {
	u.server.Stop()
	select {
	case err := <-u.done:
		return err
	case <-time.After(5 * time.Second):
		return errors.New("devstack: ui server did not stop within 5s")
	}
}
