// Package nodeproto is the connection between the stand-in node
// (oac-node-dev) and the stand-in Core (oac-devcore), in the platform's
// dialect (CONTRACT §6.2, §11): a minimal WebSocket (RFC 6455) carrying
// JSON text frames.
//
// The platform's node speaks WebSocket to Core; so do the stand-ins, with
// a small hand-written implementation instead of a dependency: the
// opening handshake over HTTP/1.1 (Upgrade, Sec-WebSocket-Key/Accept),
// masked client frames, unmasked server frames, text messages (fragments
// reassembled), ping answered with pong, and the closing handshake. No
// extensions and no subprotocols; a message is at most MaxMessage bytes.
//
// Frames, one JSON object per text message, each carrying "version" 5 and
// "type", decoded strictly by both sides as the platform's do (the field
// lists of services/core/internal/sandbox/node/generation_json.go; the
// checks of wire.go and generation_wire.go of MiniMax-AI/OpenAgentCore,
// ProtocolVersion 5 as in its fork sandbaseai/OpenAgentCore):
//
//	node → Core  hello          identity, health, generation_management (when it manages generations)
//	Core → node  welcome        connection_id, owner_epoch, deployment (generation-managing nodes only)
//	node → Core  heartbeat      connection_id, owner_epoch, health (health.generations: at most 8), every 10 s
//	Core → node  heartbeat_ack  connection_id, owner_epoch, deployment (generation-managing nodes only), one per heartbeat
//	node → Core  retention      control{id, sequence, connection_id, owner_epoch, references}
//	Core → node  retention_ack  control{…, retentions (keep false: the node may collect)}, deployment
//	Core → node  request        request{id, sequence, connection_id, owner_epoch, deployment_generation, operation, …}
//	node → Core  response       response{id, connection_id, error_code, …}
//
// A new target generation reaches a node in the deployment of the next
// heartbeat_ack; Core sends nothing unasked but requests.
package nodeproto
