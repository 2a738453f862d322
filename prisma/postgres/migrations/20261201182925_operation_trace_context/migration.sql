-- AlterTable
ALTER TABLE "Operation" ADD COLUMN     "traceContext" TEXT;
