// Package nodeproto is the connection between the stand-in node
// (oac-node-dev) and the stand-in Core (oac-devcore): a minimal WebSocket
// (RFC 6455) carrying JSON text messages (CONTRACT §6.2).
//
// The platform's node speaks WebSocket to Core; so do the stand-ins, with
// a small hand-written implementation instead of a dependency: the
// opening handshake over HTTP/1.1 (Upgrade, Sec-WebSocket-Key/Accept),
// masked client frames, unmasked server frames, text messages (fragments
// reassembled), ping answered with pong, and the closing handshake. No
// extensions and no subprotocols; a message is at most MaxMessage bytes.
//
// Messages, one JSON object per text message, decoded strictly (unknown
// fields refused):
//
//	node → Core   hello      protocol_version, identity, health, generation_management
//	Core → node   welcome    connection_id, owner_epoch, deployment (generation managing nodes)
//	node → Core   heartbeat  health, generations (at most 8 observations), every 10 s
//	Core → node   deployment a new target generation
//	Core → node   drop       a drop grant: the node may collect that generation
package nodeproto
