-- CreateTable
CREATE TABLE "TemporaryNetwork" (
    "name" TEXT NOT NULL,
    "clientId" TEXT NOT NULL,
    "spec" JSONB NOT NULL,
    "public" BOOLEAN NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "TemporaryNetwork_pkey" PRIMARY KEY ("name")
);

-- CreateIndex
CREATE INDEX "TemporaryNetwork_expiresAt_idx" ON "TemporaryNetwork"("expiresAt");

-- CreateIndex
CREATE INDEX "TemporaryNetwork_clientId_expiresAt_idx" ON "TemporaryNetwork"("clientId", "expiresAt");
