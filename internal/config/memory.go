package config

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// EnvMemoryLimit bounds the memory a worker's training may use (Worker.MemoryLimit).
const EnvMemoryLimit = "TRAINYARD_MEMORY_LIMIT"

// cgroupMemoryLimit is the memory limit of the process's cgroup, read once by Load; a variable so tests
// can stand in for the machine's.
var cgroupMemoryLimit = readCgroupMemoryLimit

// memoryLimit reads TRAINYARD_MEMORY_LIMIT: bytes, with an optional unit (8GiB, 512MiB, 2.5GB); "0",
// "none" or "off" mean no limit; unset means the cgroup's limit, if there is one.
func (e *env) memoryLimit(name string) int64 {
	v := strings.TrimSpace(e.get(name))
	switch strings.ToLower(v) {
	case "":
		return cgroupMemoryLimit()
	case "none", "off":
		return 0
	}
	n, err := ParseBytes(v)
	if err != nil {
		e.errs = append(e.errs, fmt.Errorf("%s=%q: %v", name, v, err))
	}
	return n
}

// ParseBytes reads a byte count with an optional unit: B, kB/MB/GB/TB (powers of 1000), KiB/MiB/GiB/TiB
// (powers of 1024; K, M, G, T are taken as these too), case-insensitive, with or without a space.
func ParseBytes(s string) (int64, error) {
	s = strings.TrimSpace(s)
	i := strings.IndexFunc(s, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	num, unit := s, ""
	if i >= 0 {
		num, unit = s[:i], strings.ToLower(strings.TrimSpace(s[i:]))
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("want a byte count such as 8GiB or 512MiB")
	}
	mult, ok := map[string]float64{"": 1, "b": 1,
		"kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40,
		"kib": 1 << 10, "mib": 1 << 20, "gib": 1 << 30, "tib": 1 << 40}[unit]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q (want B, kB, MB, GB, TB, KiB, MiB, GiB or TiB)", unit)
	}
	if v*mult >= math.MaxInt64 {
		return 0, fmt.Errorf("too large")
	}
	return int64(v * mult), nil
}

// readCgroupMemoryLimit returns the memory limit of this process's cgroup (v2 memory.max, v1
// memory.limit_in_bytes), or 0 when there is none or it cannot be read.
func readCgroupMemoryLimit() int64 {
	data, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		var root, name string
		switch {
		case parts[0] == "0" && parts[1] == "": // cgroup v2
			root, name = "/sys/fs/cgroup", "memory.max"
		case strings.Contains(","+parts[1]+",", ",memory,"): // cgroup v1
			root, name = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		// In a container the mount is often the cgroup itself rather than the hierarchy's root.
		for _, file := range []string{filepath.Join(root, parts[2], name), filepath.Join(root, name)} {
			if n := cgroupValue(file); n > 0 {
				return n
			}
		}
	}
	return 0
}

// cgroupValue reads a cgroup limit file: "max" or v1's page-rounded 2^63 mean no limit.
func cgroupValue(file string) int64 {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0
	}
	return n
}
