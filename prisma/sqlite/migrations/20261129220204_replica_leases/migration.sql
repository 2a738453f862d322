-- CreateTable
CREATE TABLE "Replica" (
    "id" TEXT NOT NULL PRIMARY KEY,
    "startedAt" DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeatAt" DATETIME NOT NULL
);

-- CreateIndex
CREATE INDEX "Replica_heartbeatAt_idx" ON "Replica"("heartbeatAt");
