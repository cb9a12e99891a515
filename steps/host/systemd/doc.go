// Package systemd is the installer's adapter to the host's service manager
// and the text of what it hands to it: the node's unit file and its proxy
// environment file.
//
// Manager lists only the calls the installer makes (daemon-reload, enable,
// start, stop, disable, reset-failed, unit properties). Dial returns the
// real implementation over go-systemd's D-Bus API, using only its
// ...Context calls: the system bus first, systemd's private socket
// /run/systemd/private as the fallback (a root process reaches systemd
// there even when no bus daemon runs). No systemctl subprocess is started.
// systemd fsyncs none of the links enable and disable make or remove, so
// DBus.Enable and DBus.Disable make them durable (SyncLinks) from the
// changes systemd reports. WaitActive polls a unit's ActiveState up to a
// deadline. Package systemdtest holds a fake Manager for the steps' tests.
//
// The unit of CONTRACT §4.1 is rendered here, not with go-systemd's
// serializer, which escapes nothing:
//
//	[Unit]     Description, Wants, After (per provider), StartLimitIntervalSec=0
//	[Service]  Type=exec, User=oac-node, EnvironmentFile=-/etc/oac-node/<id>.env,
//	           ExecStart=:"<root>/native/bin/oac-node" run --config … --state-dir …,
//	           WorkingDirectory, Restart, RestartSec, RestartPreventExitStatus=78,
//	           KillMode=process, UMask=0077
//	[Install]  WantedBy=multi-user.target
//
// ExecStart's leading ":" turns off $VARIABLE substitution; specifiers (%)
// are still expanded by systemd, so every % of a path is doubled, in
// WorkingDirectory as well. Paths in ExecStart are double-quoted with \ and "
// escaped. A value systemd cannot read back exactly (a newline, NUL or other
// control character, invalid UTF-8, a relative or unclean path, a trailing
// backslash or space) is refused with ErrUnrepresentable before anything is
// written.
//
// The environment file /etc/oac-node/<id>.env (CONTRACT §10 "Env file")
// holds the latest run's proxy settings: one NAME="value" line for each of
// the six proxy names present after normalisation, \ and " escaped, with
// localhost,127.0.0.1,::1 appended to both no_proxy spellings. It exists
// only while an http or https proxy is set. Proxy values may carry
// credentials: no error of this package contains one.
package systemd
