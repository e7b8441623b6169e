package alarmpoll

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// Probe asks the member whose metrics listener is at baseURL (http://host:2381) for etcd's
// /health and returns the alarm it reports ("ALARM NOSPACE"), or "" when it reports none.
// HTTPProbe outside tests; the controller's envtest suite answers for its fake etcd.
type Probe func(ctx context.Context, baseURL string) (string, error)

// HTTPProbe reads GET <baseURL>/health?serializable=true: etcd's alarms, then a local read (no
// leader needed, no credentials: the metrics listener is plain HTTP). An alarm makes it answer
// {"health":"false","reason":"ALARM NOSPACE"} (etcd 3.5 and 3.6).
func HTTPProbe(ctx context.Context, baseURL string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/health?serializable=true", nil)
	if err != nil {
		return "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var h struct {
		Health string `json:"health"`
		Reason string `json:"reason"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<10)).Decode(&h); err != nil {
		return "", fmt.Errorf("reading %s/health: %w", baseURL, err)
	}
	if h.Health == "false" && strings.HasPrefix(h.Reason, "ALARM") {
		return h.Reason, nil
	}
	return "", nil
}
