-- CreateTable
CREATE TABLE "TemporaryNetwork" (
    "name" TEXT NOT NULL PRIMARY KEY,
    "clientId" TEXT NOT NULL,
    "spec" JSONB NOT NULL,
    "public" BOOLEAN NOT NULL,
    "createdAt" DATETIME NOT NULL,
    "expiresAt" DATETIME NOT NULL
);

-- CreateIndex
CREATE INDEX "TemporaryNetwork_expiresAt_idx" ON "TemporaryNetwork"("expiresAt");

-- CreateIndex
CREATE INDEX "TemporaryNetwork_clientId_expiresAt_idx" ON "TemporaryNetwork"("clientId", "expiresAt");
