package provider

import (
	"net/netip"
	"slices"
	"strconv"
)

// Network is the microsandbox adapter's network policy: deny by default in
// both directions, with explicit allow rules.
type Network struct {
	DefaultEgress  string // "deny"
	DefaultIngress string // "deny"
	Rules          []Rule
}

// Rule is one allow rule. Destination is an IP address, "public" (every
// public address) or "host" (the host's resolver); Protocol and Port are
// empty for a rule that allows every protocol and port.
type Rule struct {
	Action      string // "allow"
	Direction   string // "egress" or "ingress"
	Destination string
	Protocol    string // "", "tcp" or "udp"
	Port        string // "" or a decimal port
}

// Rule and policy values.
const (
	Deny          = "deny"
	Allow         = "allow"
	Egress        = "egress"
	Ingress       = "ingress"
	DestPublic    = "public"
	DestHost      = "host"
	ProtocolTCP   = "tcp"
	ProtocolUDP   = "udp"
	resolverPort  = "53"
	maxRuleString = 255
)

// MicrosandboxNetwork returns the policy a node's sandboxes get: one allow
// egress TCP rule per resolved Core address and port, egress to public
// addresses, and the host's resolver on UDP and TCP port 53.
func MicrosandboxNetwork(core []netip.AddrPort) Network {
	n := Network{DefaultEgress: Deny, DefaultIngress: Deny}
	for _, ap := range core {
		n.Rules = append(n.Rules, Rule{Action: Allow, Direction: Egress, Destination: ap.Addr().Unmap().String(),
			Protocol: ProtocolTCP, Port: strconv.Itoa(int(ap.Port()))})
	}
	n.Rules = append(n.Rules,
		Rule{Action: Allow, Direction: Egress, Destination: DestPublic},
		Rule{Action: Allow, Direction: Egress, Destination: DestHost, Protocol: ProtocolUDP, Port: resolverPort},
		Rule{Action: Allow, Direction: Egress, Destination: DestHost, Protocol: ProtocolTCP, Port: resolverPort},
	)
	return n
}

// Equal reports whether n and o are the same policy, rules in order.
func (n Network) Equal(o Network) bool {
	return n.DefaultEgress == o.DefaultEgress && n.DefaultIngress == o.DefaultIngress && slices.Equal(n.Rules, o.Rules)
}

func (n Network) doc() map[string]any {
	rules := make([]any, 0, len(n.Rules))
	for _, r := range n.Rules {
		m := map[string]any{"action": r.Action, "direction": r.Direction, "destination": r.Destination}
		if r.Protocol != "" {
			m["protocol"] = r.Protocol
		}
		if r.Port != "" {
			m["port"] = r.Port
		}
		rules = append(rules, m)
	}
	return map[string]any{"default_egress": n.DefaultEgress, "default_ingress": n.DefaultIngress, "rules": rules}
}

func (n Network) validate(path string) error {
	if n.DefaultEgress != Deny {
		return fieldErr(path+".default_egress", "must be %q", Deny)
	}
	if n.DefaultIngress != Deny {
		return fieldErr(path+".default_ingress", "must be %q", Deny)
	}
	for i, r := range n.Rules {
		if err := r.validate(path + ".rules[" + strconv.Itoa(i) + "]"); err != nil {
			return err
		}
	}
	return nil
}

func (r Rule) validate(path string) error {
	if r.Action != Allow {
		return fieldErr(path+".action", "must be %q", Allow)
	}
	if r.Direction != Egress && r.Direction != Ingress {
		return fieldErr(path+".direction", "must be %q or %q", Egress, Ingress)
	}
	switch d := r.Destination; {
	case d == DestPublic || d == DestHost:
	default:
		if _, err := netip.ParseAddr(d); err != nil {
			if _, perr := netip.ParsePrefix(d); perr != nil {
				return fieldErr(path+".destination", "must be an IP address, a prefix, %q or %q", DestPublic, DestHost)
			}
		}
	}
	switch r.Protocol {
	case "", ProtocolTCP, ProtocolUDP:
	default:
		return fieldErr(path+".protocol", "must be %q or %q", ProtocolTCP, ProtocolUDP)
	}
	if r.Port != "" {
		p, err := strconv.Atoi(r.Port)
		if err != nil || p < 1 || p > 65535 || strconv.Itoa(p) != r.Port {
			return fieldErr(path+".port", "must be a port from 1 to 65535")
		}
		if r.Protocol == "" {
			return fieldErr(path+".port", "needs a protocol")
		}
	}
	return nil
}
