package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"go.uber.org/zap"

	"github.com/trainyard/trainyard/inference"
	"github.com/trainyard/trainyard/internal/config"
)

// drainGrace is how long a draining process keeps its listener open after
// the registry says it drains: long enough for every router to read that
// (they read every inference.DefaultRefresh) and stop sending.
const drainGrace = inference.DefaultRefresh + 500*time.Millisecond

// registerTimeout bounds the first heartbeat: a database that does not take
// the row in this long stops the command with the error, rather than hanging
// its start.
const registerTimeout = 30 * time.Second

// runInfer is `trainyard infer`: chat completions for the base models this
// process holds (TRAINYARD_BASE_MODELS, default all it knows), with their
// adapters loaded from S3, announced in the inference registry so that
// `trainyard api` with TRAINYARD_INFERENCE=remote forwards to it. It needs
// PostgreSQL and S3, not Temporal.
func runInfer(ctx context.Context, args []string, _ io.Writer) error {
	cfg, log, err := loadServer("infer", args, config.ModeInference)
	if err != nil {
		return err
	}
	defer syncLogger(log)
	hs, err := listenHTTP(cfg.HTTPAddr)
	if err != nil {
		return err
	}
	defer hs.close()
	address, err := advertisedAddress(cfg.Inference.AdvertiseAddr, hs.ln.Addr())
	if err != nil {
		return err
	}
	inf, err := connectStorage(ctx, cfg)
	if err != nil {
		return err
	}
	defer inf.close()
	a := newApp(cfg, inf, log)
	chat := a.chatService()
	// Every base model is opened before the process registers: once
	// registered it gets traffic, and a model that does not open stops the
	// command here, by name, instead of failing requests.
	for _, name := range chat.BaseModels() {
		if _, err := a.bases.Base(ctx, name); err != nil {
			return fmt.Errorf("base model %s: %w", name, err)
		}
	}
	presence := &inference.Presence{Registry: inf.db, Address: "http://" + address, BaseModels: chat.BaseModels(),
		Load: chat.Load, Interval: cfg.Inference.Heartbeat, Log: log.Named("registry")}
	rctx, cancel := context.WithTimeout(ctx, registerTimeout)
	err = presence.Register(rctx)
	cancel()
	if err != nil {
		return fmt.Errorf("register in the inference registry: %w", err)
	}
	beats, stopBeats := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBeats()
	go presence.Run(beats) // until the calls in flight are over: a draining process is still live
	_, capacity := chat.Load()
	log.Info("inference serving", zap.String("process", presence.ID()), zap.String("url", hs.URL()),
		zap.String("address", "http://"+address), zap.Strings("base_models", chat.BaseModels()), zap.Int("capacity", capacity))

	err = hs.runDraining(ctx, a.inferHandler(chat), func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), drainGrace)
		defer cancel()
		if err := presence.Drain(dctx); err != nil {
			log.Warn("mark draining", zap.Error(err))
			return
		}
		log.Info("inference draining", zap.String("process", presence.ID()))
		<-dctx.Done()
	})
	stopBeats()
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if derr := presence.Deregister(dctx); derr != nil {
		log.Warn("leave the inference registry (the row expires by itself)", zap.Error(derr))
	}
	return err
}

// advertisedAddress is the host:port routers reach this process at: the
// configured one, else the listener's, with the host's first non-loopback
// address in place of an unspecified one (0.0.0.0 in a container).
func advertisedAddress(configured string, ln net.Addr) (string, error) {
	if configured != "" {
		return configured, nil
	}
	tcp, ok := ln.(*net.TCPAddr)
	if !ok {
		return "", fmt.Errorf("listener address %v is not TCP", ln)
	}
	if !tcp.IP.IsUnspecified() {
		return tcp.String(), nil
	}
	ip, err := hostAddress()
	if err != nil {
		return "", fmt.Errorf("listening on %v: no address to advertise (set %s): %w", tcp, config.EnvInferAdvertiseAddr, err)
	}
	return net.JoinHostPort(ip.String(), fmt.Sprint(tcp.Port)), nil
}

// hostAddress is the first global unicast address of an interface that is
// up, IPv4 first.
func hostAddress() (net.IP, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	var v6 net.IP
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, ad := range addrs {
			ipn, ok := ad.(*net.IPNet)
			if !ok || !ipn.IP.IsGlobalUnicast() {
				continue
			}
			if ip4 := ipn.IP.To4(); ip4 != nil {
				return ip4, nil
			}
			if v6 == nil {
				v6 = ipn.IP
			}
		}
	}
	if v6 != nil {
		return v6, nil
	}
	return nil, errors.New("no interface has a global unicast address")
}
