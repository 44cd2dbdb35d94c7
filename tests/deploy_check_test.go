package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/troupe-ai/troupe/bus"
)

// checkCompose: three servers of one cluster, each routed to all three on
// the port it listens for routes; the nodes and the watcher reach every
// server where it listens, with their role's creds from the auth volume.
func checkCompose(t *testing.T, help map[string][]string) {
	doc := yamlDocs(t, "../deploy/compose.yaml")[0]
	services := at(doc, "services").(map[string]any)
	var urls, routes []string
	names := map[string]bool{}
	for _, s := range []string{"nats-a", "nats-b", "nats-c"} {
		c := parseCommand(t, strs(at(services, s, "command")), help)
		if c.program != "orchestrator serve" || c.flags["--cluster"] != "troupe" || c.flags["--auth"] != "/auth" {
			t.Errorf("%s: %+v", s, c)
		}
		names[c.flags["--name"]] = true
		urls = append(urls, fmt.Sprintf("nats://%s:%d", s, port(t, c.flags["--listen"])))
		routes = append(routes, fmt.Sprintf("nats-route://%s:%d", s, port(t, c.flags["--cluster-listen"])))
		if got := c.flags["--routes"]; got != strings.Join([]string{"nats-route://nats-a:6222", "nats-route://nats-b:6222", "nats-route://nats-c:6222"}, ",") {
			t.Errorf("%s routes to %s", s, got)
		}
		if port(t, c.flags["--monitor"]) != 8222 || !mounted(at(services, s, "volumes"), "/auth") {
			t.Errorf("%s: monitor %s, volumes %v", s, c.flags["--monitor"], at(services, s, "volumes"))
		}
	}
	if len(names) != 3 || strings.Join(routes, ",") != "nats-route://nats-a:6222,nats-route://nats-b:6222,nats-route://nats-c:6222" {
		t.Errorf("server names %v, routes %v", names, routes)
	}
	for svc, role := range map[string]bus.Role{"node-1": bus.RoleNode, "node-2": bus.RoleNode, "watcher": bus.RoleWatcher} {
		c := parseCommand(t, strs(at(services, svc, "command")), help)
		if c.flags["--nats"] != strings.Join(urls, ",") {
			t.Errorf("%s connects to %s, the servers listen at %s", svc, c.flags["--nats"], strings.Join(urls, ","))
		}
		if c.flags["--creds"] != bus.CredsPath("/auth", role) {
			t.Errorf("%s takes creds %s, want %s's", svc, c.flags["--creds"], role)
		}
	}
	w := parseCommand(t, strs(at(services, "watcher", "command")), help)
	if p := port(t, w.flags["--web"]); !slices.Contains(strs(at(services, "watcher", "ports")), fmt.Sprintf("127.0.0.1:%d:%d", p, p)) {
		t.Errorf("the web view's port %d is not published: %v", p, at(services, "watcher", "ports"))
	}
}

// mounted reports whether a compose volumes list mounts something at path.
func mounted(v any, path string) bool {
	for _, m := range strs(v) {
		if parts := strings.Split(m, ":"); len(parts) >= 2 && parts[1] == path {
			return true
		}
	}
	return false
}

// checkKubernetes: three servers routed to each other's pod names, their
// ports those of the Services, probes and KEDA's scaler; the nodes' flags
// the node's; the scaler reads troupe's task queue and consumer; each
// PodDisruptionBudget selects its pods.
func checkKubernetes(t *testing.T, help map[string][]string) {
	byKind := map[string]map[string]any{}
	for _, f := range []string{"nats.yaml", "nodes.yaml"} {
		for _, d := range yamlDocs(t, "../deploy/kubernetes/"+f) {
			byKind[d["kind"].(string)+"/"+at(d, "metadata", "name").(string)] = d
		}
	}
	sts := byKind["StatefulSet/troupe-nats"]
	headless := at(sts, "spec", "serviceName").(string)
	if at(sts, "spec", "replicas") != 3 || at(byKind["Service/"+headless], "spec", "clusterIP") != "None" {
		t.Fatalf("StatefulSet %v replicas, headless Service %q", at(sts, "spec", "replicas"), headless)
	}
	serve := at(sts, "spec", "template", "spec", "containers", 0)
	c := parseCommand(t, strs(at(serve, "args")), help)
	var routes, urls []string
	for i := range 3 {
		routes = append(routes, fmt.Sprintf("nats-route://troupe-nats-%d.%s:%d", i, headless, port(t, c.flags["--cluster-listen"])))
		urls = append(urls, fmt.Sprintf("nats://troupe-nats-%d.%s:%d", i, headless, port(t, c.flags["--listen"])))
	}
	if c.flags["--routes"] != strings.Join(routes, ",") || c.flags["--name"] != "$(POD_NAME)" || c.flags["--auth"] != "/auth" {
		t.Errorf("serve %+v: want routes %s", c.flags, strings.Join(routes, ","))
	}
	ports := map[string]int{}
	for _, p := range at(serve, "ports").([]any) {
		ports[at(p, "name").(string)] = at(p, "containerPort").(int)
	}
	monitor := port(t, c.flags["--monitor"])
	if ports["client"] != port(t, c.flags["--listen"]) || ports["routes"] != port(t, c.flags["--cluster-listen"]) || ports["monitor"] != monitor ||
		at(serve, "readinessProbe", "httpGet", "port") != monitor {
		t.Errorf("container ports %v, probe %v; serve %+v", ports, at(serve, "readinessProbe"), c.flags)
	}
	node := at(byKind["Deployment/troupe-node"], "spec", "template", "spec", "containers", 0)
	n := parseCommand(t, strs(at(node, "args")), help)
	if n.program != "node" || n.flags["--nats"] != strings.Join(urls, ",") || n.flags["--creds"] != bus.CredsPath("/auth", bus.RoleNode) {
		t.Errorf("node %+v: want --nats %s", n.flags, strings.Join(urls, ","))
	}
	trigger := at(byKind["ScaledObject/troupe-node"], "spec", "triggers", 0, "metadata")
	want := fmt.Sprintf("troupe-nats.%s.svc.cluster.local:%d", at(sts, "metadata", "namespace"), monitor)
	if at(trigger, "stream") != bus.TasksStream || at(trigger, "consumer") != tasksConsumer || at(trigger, "natsServerMonitoringEndpoint") != want {
		t.Errorf("KEDA trigger %v: want stream %s, consumer %s, endpoint %s", trigger, bus.TasksStream, tasksConsumer, want)
	}
	for _, pdb := range []string{"troupe-nats", "troupe-node"} {
		sel := at(byKind["PodDisruptionBudget/"+pdb], "spec", "selector", "matchLabels", "app")
		if sel != pdb || at(byKind["PodDisruptionBudget/"+pdb], "spec", "maxUnavailable") != 1 {
			t.Errorf("PodDisruptionBudget %s selects %v", pdb, sel)
		}
	}
	if at(byKind["Service/troupe-nats"], "spec", "ports", 1, "port") != monitor {
		t.Errorf("Service troupe-nats: %v", at(byKind["Service/troupe-nats"], "spec", "ports"))
	}
}
