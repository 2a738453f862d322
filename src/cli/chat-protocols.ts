/** How `axon chat --protocol` calls StreamingChat: REST json-lines (http) or the generated Connect-ES client. */
export const CHAT_PROTOCOLS = ["http", "connect", "grpc", "grpc-web"] as const;
export type ChatProtocol = (typeof CHAT_PROTOCOLS)[number];
