-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateTable
CREATE TABLE "Principal" (
    "kind" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "secretHash" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Principal_pkey" PRIMARY KEY ("kind","name")
);

-- CreateTable
CREATE TABLE "Operation" (
    "id" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "idempotencyKey" TEXT NOT NULL,
    "requestHash" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "target" JSONB NOT NULL,
    "arguments" JSONB NOT NULL,
    "reason" TEXT NOT NULL,
    "state" TEXT NOT NULL,
    "revision" INTEGER NOT NULL,
    "presentationTitle" TEXT NOT NULL,
    "presentationSummary" TEXT NOT NULL,
    "approvalId" TEXT,
    "result" JSONB,
    "errorCode" TEXT,
    "errorMessage" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,
    "terminalAt" TIMESTAMP(3),
    "claimedBy" TEXT,
    "claimedAt" TIMESTAMP(3),

    CONSTRAINT "Operation_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Grant" (
    "id" TEXT NOT NULL,
    "revision" INTEGER NOT NULL,
    "clientId" TEXT NOT NULL,
    "status" TEXT NOT NULL,
    "operation" TEXT NOT NULL,
    "target" JSONB NOT NULL,
    "reason" TEXT NOT NULL,
    "mode" TEXT NOT NULL,
    "minutes" INTEGER,
    "maxUses" INTEGER,
    "usesRemaining" INTEGER,
    "usedCount" INTEGER NOT NULL DEFAULT 0,
    "expiresAt" TIMESTAMP(3),
    "clientRequestId" TEXT,
    "requestHash" TEXT,
    "operationId" TEXT,
    "decidedBy" TEXT,
    "decisionReason" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Grant_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Event" (
    "seq" SERIAL NOT NULL,
    "kind" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "operationId" TEXT,
    "grantId" TEXT,
    "revision" INTEGER,
    "payload" JSONB NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Event_pkey" PRIMARY KEY ("seq")
);

-- CreateTable
CREATE TABLE "AuditRecord" (
    "id" SERIAL NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "actor" TEXT NOT NULL,
    "actorKind" TEXT NOT NULL,
    "action" TEXT NOT NULL,
    "category" TEXT,
    "operationId" TEXT,
    "grantId" TEXT,
    "detail" JSONB NOT NULL,

    CONSTRAINT "AuditRecord_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AdmissionCounter" (
    "clientId" TEXT NOT NULL,
    "windowStart" TIMESTAMP(3) NOT NULL,
    "count" INTEGER NOT NULL,

    CONSTRAINT "AdmissionCounter_pkey" PRIMARY KEY ("clientId","windowStart")
);

-- CreateTable
CREATE TABLE "SealedPayload" (
    "id" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "idempotencyKey" TEXT,
    "digest" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "nonce" BYTEA NOT NULL,
    "ciphertext" BYTEA NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "consumedAt" TIMESTAMP(3),

    CONSTRAINT "SealedPayload_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TransferStream" (
    "id" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "transferId" TEXT NOT NULL,
    "size" INTEGER NOT NULL,
    "sha256" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,
    "complete" BOOLEAN NOT NULL DEFAULT false,

    CONSTRAINT "TransferStream_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TransferChunk" (
    "streamId" TEXT NOT NULL,
    "index" INTEGER NOT NULL,
    "data" BYTEA NOT NULL,

    CONSTRAINT "TransferChunk_pkey" PRIMARY KEY ("streamId","index")
);

-- CreateIndex
CREATE INDEX "Operation_clientId_createdAt_idx" ON "Operation"("clientId", "createdAt");

-- CreateIndex
CREATE INDEX "Operation_state_updatedAt_idx" ON "Operation"("state", "updatedAt");

-- CreateIndex
CREATE INDEX "Operation_clientId_state_idx" ON "Operation"("clientId", "state");

-- CreateIndex
CREATE UNIQUE INDEX "Operation_clientId_idempotencyKey_key" ON "Operation"("clientId", "idempotencyKey");

-- CreateIndex
CREATE INDEX "Grant_status_expiresAt_idx" ON "Grant"("status", "expiresAt");

-- CreateIndex
CREATE INDEX "Grant_clientId_status_idx" ON "Grant"("clientId", "status");

-- CreateIndex
CREATE UNIQUE INDEX "Grant_clientId_clientRequestId_key" ON "Grant"("clientId", "clientRequestId");

-- CreateIndex
CREATE INDEX "Event_operationId_seq_idx" ON "Event"("operationId", "seq");

-- CreateIndex
CREATE INDEX "AuditRecord_operationId_idx" ON "AuditRecord"("operationId");

-- CreateIndex
CREATE INDEX "SealedPayload_expiresAt_idx" ON "SealedPayload"("expiresAt");

-- CreateIndex
CREATE UNIQUE INDEX "SealedPayload_clientId_idempotencyKey_key" ON "SealedPayload"("clientId", "idempotencyKey");

-- CreateIndex
CREATE INDEX "TransferStream_clientId_transferId_idx" ON "TransferStream"("clientId", "transferId");

-- CreateIndex
CREATE INDEX "TransferStream_expiresAt_idx" ON "TransferStream"("expiresAt");

-- AddForeignKey
ALTER TABLE "TransferChunk" ADD CONSTRAINT "TransferChunk_streamId_fkey" FOREIGN KEY ("streamId") REFERENCES "TransferStream"("id") ON DELETE CASCADE ON UPDATE CASCADE;
