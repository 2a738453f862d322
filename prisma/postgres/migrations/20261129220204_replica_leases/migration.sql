-- CreateTable
CREATE TABLE "Replica" (
    "id" TEXT NOT NULL,
    "startedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeatAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Replica_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Replica_heartbeatAt_idx" ON "Replica"("heartbeatAt");
