// SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
/*
 * MRs of dma-buf memory (ibv_reg_dmabuf_mr) on the device under test. The
 * dma-buf comes from vgem, the kernel's virtual GEM driver (a dumb buffer
 * exported with PRIME), or in the udmabuf variant from udmabuf (a memfd
 * exported whole), and the test reaches its bytes through an mmap of
 * the dma-buf itself. Two RC QPs of one PD connected to each other, a
 * (requester, CQ ca) and b (CQ cb).
 *
 * Checked: WRITE, READ, SEND (from and into the buffer) and fetch and add
 * through such an MR, with every field of every completion and the bytes
 * in the buffer; an MR of part of the buffer at an iova of its own, and a
 * remote access error past its end; the MR keeps working after the
 * process closed the dma-buf and the GEM object; the refusals (no
 * dma-buf, a range outside the buffer, an iova whose page offset differs,
 * on-demand paging, re-registration, also by a command written directly);
 * a read-only export takes no MR that lets anyone write (EACCES; vgem
 * only: udmabuf exports read-write).
 *
 * Each variant is skipped where the kernel lacks its exporter: vgem on
 * the debug kernel, udmabuf on Debian's 6.1.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>

#include "kselftest_harness.h"
#include "srdma_test.h"

#define BUF_LEN		(1024 * 1024)	/* 512 x 512 pixels of 32 bits */
#define HOST_LEN	(256 * 1024)
#define ACCESS_QP	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
			 IBV_ACCESS_REMOTE_ATOMIC)
#define ACCESS_ALL	(IBV_ACCESS_LOCAL_WRITE | ACCESS_QP)
#define IOVA		0x7000000000ULL

#define connect_to(qp, dqpn, gidx, gid) \
	srdma_test_connect_to(qp, dqpn, gidx, gid, ACCESS_QP)
#define fill srdma_test_fill
#define filled srdma_test_filled
/* One completion within about 5 s. */
#define wait_wc(cq, wc) srdma_test_wait_wc_for(cq, wc, 50000)

FIXTURE(dmabuf) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *ca, *cb;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *bmr;		/* ACCESS_ALL over the whole buffer */
	struct ibv_mr *hmr;		/* host memory */
	unsigned char *host;
	unsigned char *buf;		/* the dma-buf, mapped */
	int drm, dmabuf;		/* drm: vgem's, or -1 */
	uint32_t gem;
	union ibv_gid gid;
	int gidx;
};

FIXTURE_VARIANT(dmabuf) {
	bool udmabuf;			/* else vgem */
};

FIXTURE_VARIANT_ADD(dmabuf, vgem) {
	.udmabuf = false,
};

FIXTURE_VARIANT_ADD(dmabuf, udmabuf) {
	.udmabuf = true,
};

FIXTURE_SETUP(dmabuf)
{
	int err;

	self->drm = self->dmabuf = -1;
	if (variant->udmabuf) {
		err = srdma_test_udmabuf(BUF_LEN, &self->dmabuf);
		if (err == ENODEV)
			SRDMA_TEST_SETUP_SKIP("no udmabuf (CONFIG_UDMABUF)");
		ASSERT_EQ(0, err) TH_LOG("udmabuf: %s", strerror(err));
	} else {
		self->drm = srdma_test_vgem_open();
		if (self->drm < 0)
			SRDMA_TEST_SETUP_SKIP("no vgem device (modprobe vgem)");
		/* 512 x 512 pixels of 32 bits: BUF_LEN. */
		ASSERT_EQ(0, srdma_test_vgem_buf(self->drm, 512, 512, 1,
						 &self->gem, &self->dmabuf));
	}
	self->buf = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_SHARED,
			 self->dmabuf, 0);
	ASSERT_NE(MAP_FAILED, self->buf) TH_LOG("mmap: %s", strerror(errno));
	memset(self->buf, 0, BUF_LEN);

	self->ctx = srdma_test_open();
	ASSERT_NE(NULL, self->ctx);
	self->gidx = srdma_test_ipv4_gid(self->ctx, &self->gid);
	ASSERT_LE(0, self->gidx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	self->ca = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	self->cb = ibv_create_cq(self->ctx, 64, NULL, NULL, 0);
	ASSERT_NE(NULL, self->ca);
	ASSERT_NE(NULL, self->cb);
	self->qa = srdma_test_rc_qp(self->pd, self->ca, 16, 16, 1);
	self->qb = srdma_test_rc_qp(self->pd, self->cb, 16, 16, 1);
	ASSERT_NE(NULL, self->qa);
	ASSERT_NE(NULL, self->qb);
	ASSERT_EQ(0, connect_to(self->qa, self->qb->qp_num, self->gidx,
				&self->gid));
	ASSERT_EQ(0, connect_to(self->qb, self->qa->qp_num, self->gidx,
				&self->gid));
	self->bmr = ibv_reg_dmabuf_mr(self->pd, 0, BUF_LEN, IOVA,
				      self->dmabuf, ACCESS_ALL);
	ASSERT_NE(NULL, self->bmr) TH_LOG("reg_dmabuf_mr: %s",
					  strerror(errno));
	self->host = aligned_alloc(4096, HOST_LEN);
	ASSERT_NE(NULL, self->host);
	memset(self->host, 0, HOST_LEN);
	self->hmr = ibv_reg_mr(self->pd, self->host, HOST_LEN, ACCESS_ALL);
	ASSERT_NE(NULL, self->hmr);
}

FIXTURE_TEARDOWN(dmabuf)
{

	if (self->qa)
		ibv_destroy_qp(self->qa);
	if (self->qb)
		ibv_destroy_qp(self->qb);
	if (self->hmr)
		ibv_dereg_mr(self->hmr);
	if (self->bmr)
		ibv_dereg_mr(self->bmr);
	if (self->ca)
		ibv_destroy_cq(self->ca);
	if (self->cb)
		ibv_destroy_cq(self->cb);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	free(self->host);
	if (self->buf && self->buf != MAP_FAILED)
		munmap(self->buf, BUF_LEN);
	if (self->dmabuf >= 0)
		close(self->dmabuf);
	if (self->drm >= 0) {
		if (self->gem)
			srdma_test_vgem_close(self->drm, self->gem);
		close(self->drm);
	}
}

/* Fetch and add adds 3. */
#define post(qp, op, id, lmr, local, len, rmr, remote) \
	srdma_test_post_mr(qp, op, id, lmr, local, len, rmr, remote, 3)

#define EXPECT_REQ_WC(id, op, len) do {					\
	struct ibv_wc __w;						\
									\
	wait_wc(self->ca, &__w);					\
	EXPECT_SEND_WC(__w, id, IBV_WC_SUCCESS, op, len, self->qa);	\
} while (0)

/* What libibverbs reports of the MR. */
TEST_F(dmabuf, reg)
{
	EXPECT_EQ(BUF_LEN, self->bmr->length);
	EXPECT_EQ(0, (uintptr_t)self->bmr->addr);	/* the offset */
	EXPECT_EQ(self->bmr->lkey, self->bmr->rkey);
	EXPECT_EQ(self->pd, self->bmr->pd);
}

/* WRITE into the buffer and READ out of it, across page boundaries. */
TEST_F(dmabuf, write_read)
{
	fill(self->host, 70000, 3);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 1, self->hmr,
			  (uintptr_t)self->host, 70000, self->bmr,
			  IOVA + 4000));
	EXPECT_REQ_WC(1, IBV_WC_RDMA_WRITE, 0);
	EXPECT_TRUE(filled(self->buf + 4000, 70000, 3));
	EXPECT_EQ(0, self->buf[3999]);
	EXPECT_EQ(0, self->buf[74000]);

	fill(self->buf + BUF_LEN - 65536, 65536, 8);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 2, self->hmr,
			  (uintptr_t)self->host + 131072, 65536, self->bmr,
			  IOVA + BUF_LEN - 65536));
	EXPECT_REQ_WC(2, IBV_WC_RDMA_READ, 65536);
	EXPECT_TRUE(filled(self->host + 131072, 65536, 8));

	/* One byte past the end: a remote access error. */
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 3, self->hmr,
			  (uintptr_t)self->host, 16, self->bmr,
			  IOVA + BUF_LEN - 15));
	{
		struct ibv_wc wc;

		wait_wc(self->ca, &wc);
		EXPECT_SEND_WC(wc, 3, IBV_WC_REM_ACCESS_ERR, 0, 0, self->qa);
	}
}

#define THP_SHMEM "/sys/kernel/mm/transparent_hugepage/shmem_enabled"
#define HUGE_LEN	(4 * 1024 * 1024)	/* two huge pages */

/* Write @val to THP_SHMEM; 0 or -1. */
static int thp_shmem_set(const char *val)
{
	FILE *f = fopen(THP_SHMEM, "w");
	int err;

	if (!f)
		return -1;
	err = fputs(val, f) < 0;
	return fclose(f) || err ? -1 : 0;
}

/* The setting in force in THP_SHMEM (the word in brackets), or "". */
static void thp_shmem_get(char *val, size_t len)
{
	char line[128], *b, *e;
	FILE *f = fopen(THP_SHMEM, "r");

	val[0] = 0;
	if (!f)
		return;
	if (fgets(line, sizeof(line), f) && (b = strchr(line, '[')) &&
	    (e = strchr(b, ']')) && (size_t)(e - b) < len) {
		memcpy(val, b + 1, e - b - 1);
		val[e - b - 1] = 0;
	}
	fclose(f);
}

/* ShmemHugePages of /proc/meminfo, in kB; -1 if not found. */
static long shmem_huge_kb(void)
{
	char line[128];
	long kb = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "ShmemHugePages: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/*
 * A buffer on huge pages (shmem's transparent huge pages, forced while
 * it is made): each 2 MiB is one compound page, whose tail pages have no
 * count of their own, so the MR must take its references on the huge
 * page (helper-84). The MR is made; a WRITE across the boundary of the
 * two huge pages lands byte for byte, and a READ of the second one reads
 * it. Skipped where no huge page could be had.
 */
TEST_F(dmabuf, huge_pages)
{
	unsigned char *hb = MAP_FAILED;
	int fd = -1, made, err = 0;
	char old[32];
	uint32_t gem = 0;
	struct ibv_mr *mr;
	struct ibv_wc wc;
	long kb0, kb1;

	thp_shmem_get(old, sizeof(old));
	if (!old[0] || thp_shmem_set("force"))
		SKIP(return, "no shmem transparent huge pages (%s)", THP_SHMEM);
	kb0 = shmem_huge_kb();
	/* Made and filled while forced; nothing here may end the test. */
	if (variant->udmabuf)
		err = srdma_test_udmabuf(HUGE_LEN, &fd);
	else
		err = srdma_test_vgem_buf(self->drm, 1024, 1024, 1, &gem, &fd);
	if (!err) {
		hb = mmap(NULL, HUGE_LEN, PROT_READ | PROT_WRITE, MAP_SHARED,
			  fd, 0);
		if (hb != MAP_FAILED)
			memset(hb, 0, HUGE_LEN);
	}
	made = !err && hb != MAP_FAILED;
	kb1 = shmem_huge_kb();
	ASSERT_EQ(0, thp_shmem_set(old)) TH_LOG("set %s back to %s", THP_SHMEM, old);
	ASSERT_EQ(0, err) TH_LOG("buffer: %s", strerror(err));
	ASSERT_TRUE(made) TH_LOG("mmap: %s", strerror(errno));
	if (kb0 < 0 || kb1 - kb0 < 2048) {
		munmap(hb, HUGE_LEN);
		close(fd);
		if (gem)
			srdma_test_vgem_close(self->drm, gem);
		SKIP(return, "no huge page for the buffer (ShmemHugePages %ld -> %ld kB)",
		     kb0, kb1);
	}

	mr = ibv_reg_dmabuf_mr(self->pd, 0, HUGE_LEN, IOVA, fd, ACCESS_ALL);
	if (!mr && variant->udmabuf && errno == EOPNOTSUPP) {
		munmap(hb, HUGE_LEN);
		close(fd);
		SKIP(return, "refused: this kernel's udmabuf maps a huge page's first page for all of them (6.12 before upstream a26fd92b)");
	}
	ASSERT_NE(NULL, mr) TH_LOG("reg_dmabuf_mr on huge pages: %s",
				   strerror(errno));
	fill(self->host, 70000, 5);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 1, self->hmr,
			  (uintptr_t)self->host, 70000, mr,
			  IOVA + 2 * 1024 * 1024 - 30000));
	EXPECT_REQ_WC(1, IBV_WC_RDMA_WRITE, 0);
	EXPECT_TRUE(filled(hb + 2 * 1024 * 1024 - 30000, 70000, 5));
	EXPECT_EQ(0, hb[2 * 1024 * 1024 - 30001]);
	EXPECT_EQ(0, hb[2 * 1024 * 1024 + 40000]);
	fill(hb + HUGE_LEN - 65536, 65536, 9);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 2, self->hmr,
			  (uintptr_t)self->host + 131072, 65536, mr,
			  IOVA + HUGE_LEN - 65536));
	EXPECT_REQ_WC(2, IBV_WC_RDMA_READ, 65536);
	EXPECT_TRUE(filled(self->host + 131072, 65536, 9));
	EXPECT_EQ(0, ibv_poll_cq(self->ca, 1, &wc));
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(hb, HUGE_LEN);
	close(fd);
	if (gem)
		srdma_test_vgem_close(self->drm, gem);
}

/* SEND out of the buffer, SEND into it; fetch and add on a word of it. */
TEST_F(dmabuf, send_recv_atomic)
{
	struct ibv_wc wc;
	uint64_t v = 40;

	fill(self->buf + 100, 5000, 5);
	ASSERT_EQ(0, srdma_test_post_recv(self->qb, self->hmr, self->host,
					  8192, 0x55));
	ASSERT_EQ(0, post(self->qa, IBV_WR_SEND, 4, self->bmr, IOVA + 100,
			  5000, NULL, 0));
	EXPECT_REQ_WC(4, IBV_WC_SEND, 0);
	wait_wc(self->cb, &wc);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x55, wc.wr_id);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(5000, wc.byte_len);
	EXPECT_EQ(0, wc.wc_flags);
	EXPECT_EQ(self->qb->qp_num, wc.qp_num);
	EXPECT_EQ(self->qa->qp_num, wc.src_qp);
	EXPECT_TRUE(filled(self->host, 5000, 5));

	/* A receive whose buffer is the dma-buf. */
	{
		struct ibv_sge sge = { .addr = IOVA + 200000, .length = 8192,
				       .lkey = self->bmr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 0x66, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		ASSERT_EQ(0, ibv_post_recv(self->qb, &rw, &bad));
	}
	fill(self->host + 16384, 6000, 6);
	ASSERT_EQ(0, post(self->qa, IBV_WR_SEND, 5, self->hmr,
			  (uintptr_t)self->host + 16384, 6000, NULL, 0));
	EXPECT_REQ_WC(5, IBV_WC_SEND, 0);
	wait_wc(self->cb, &wc);
	EXPECT_EQ(IBV_WC_SUCCESS, wc.status);
	EXPECT_EQ(0x66, wc.wr_id);
	EXPECT_EQ(IBV_WC_RECV, wc.opcode);
	EXPECT_EQ(6000, wc.byte_len);
	EXPECT_EQ(0, wc.wc_flags);
	EXPECT_EQ(self->qb->qp_num, wc.qp_num);
	EXPECT_EQ(self->qa->qp_num, wc.src_qp);
	EXPECT_TRUE(filled(self->buf + 200000, 6000, 6));

	memcpy(self->buf + 512, &v, 8);
	ASSERT_EQ(0, post(self->qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 6, self->hmr,
			  (uintptr_t)self->host + 32768, 8, self->bmr,
			  IOVA + 512));
	EXPECT_REQ_WC(6, IBV_WC_FETCH_ADD, 8);
	memcpy(&v, self->host + 32768, 8);
	EXPECT_EQ(40, v);
	memcpy(&v, self->buf + 512, 8);
	EXPECT_EQ(43, v);
}

/* An MR of part of the buffer: bytes 4196.. at iova 0x10000064. */
TEST_F(dmabuf, part)
{
	struct ibv_mr *part;
	struct ibv_wc wc;

	part = ibv_reg_dmabuf_mr(self->pd, 4096 + 100, 8192, 0x10000064,
				 self->dmabuf, ACCESS_ALL);
	ASSERT_NE(NULL, part) TH_LOG("reg_dmabuf_mr: %s", strerror(errno));
	EXPECT_NE(self->bmr->rkey, part->rkey);
	fill(self->host, 8192, 7);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 7, self->hmr,
			  (uintptr_t)self->host, 8192, part, 0x10000064));
	EXPECT_REQ_WC(7, IBV_WC_RDMA_WRITE, 0);
	EXPECT_TRUE(filled(self->buf + 4196, 8192, 7));
	EXPECT_EQ(0, self->buf[4195]);
	EXPECT_EQ(0, self->buf[4196 + 8192]);
	/* Past its end, though inside the buffer. */
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 8, self->hmr,
			  (uintptr_t)self->host, 2, part,
			  0x10000064 + 8191));
	wait_wc(self->ca, &wc);
	EXPECT_SEND_WC(wc, 8, IBV_WC_REM_ACCESS_ERR, 0, 0, self->qa);
	EXPECT_EQ(0, self->buf[4196 + 8192]);
	EXPECT_EQ(0, ibv_dereg_mr(part));
}

/*
 * A read-only export (PRIME without DRM_RDWR): no MR that lets anyone
 * write it (EACCES); a remotely readable one works.
 */
TEST_F(dmabuf, read_only)
{
	struct ibv_mr *mr;
	unsigned char *p;
	uint32_t gem;
	int fd;

	if (variant->udmabuf)
		SKIP(return, "udmabuf exports read-write only");
	ASSERT_EQ(0, srdma_test_vgem_buf(self->drm, 1024, 1, 0, &gem, &fd));
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, p);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(self->pd, 0, 4096, 0, fd,
					  ACCESS_ALL));
	EXPECT_EQ(EACCES, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(self->pd, 0, 4096, 0, fd,
					  IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EACCES, errno);
	mr = ibv_reg_dmabuf_mr(self->pd, 0, 4096, 0, fd,
			       IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, mr) TH_LOG("reg_dmabuf_mr: %s", strerror(errno));
	memset(self->host, 0xee, 4096);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 13, self->hmr,
			  (uintptr_t)self->host, 4096, mr, 0));
	EXPECT_REQ_WC(13, IBV_WC_RDMA_READ, 4096);
	EXPECT_EQ(0, memcmp(self->host, p, 4096));
	EXPECT_EQ(0, self->host[100]);		/* a new buffer is zeroed */
	/* Not writable remotely: a remote access error. */
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 14, self->hmr,
			  (uintptr_t)self->host, 16, mr, 0));
	{
		struct ibv_wc wc;

		wait_wc(self->ca, &wc);
		EXPECT_SEND_WC(wc, 14, IBV_WC_REM_ACCESS_ERR, 0, 0, self->qa);
	}
	EXPECT_EQ(0, ibv_dereg_mr(mr));
	munmap(p, 4096);
	close(fd);
	srdma_test_vgem_close(self->drm, gem);
}

/* The MR holds the buffer: the process's handles on it can go. */
TEST_F(dmabuf, outlives_fd)
{
	fill(self->buf + 65536, 4096, 2);
	ASSERT_EQ(0, munmap(self->buf, BUF_LEN));
	self->buf = NULL;
	ASSERT_EQ(0, close(self->dmabuf));
	self->dmabuf = -1;
	if (self->gem)
		srdma_test_vgem_close(self->drm, self->gem);
	self->gem = 0;
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 9, self->hmr,
			  (uintptr_t)self->host, 4096, self->bmr,
			  IOVA + 65536));
	EXPECT_REQ_WC(9, IBV_WC_RDMA_READ, 4096);
	EXPECT_TRUE(filled(self->host, 4096, 2));
	fill(self->host, 4096, 4);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 10, self->hmr,
			  (uintptr_t)self->host, 4096, self->bmr, IOVA));
	EXPECT_REQ_WC(10, IBV_WC_RDMA_WRITE, 0);
	memset(self->host + 8192, 0, 4096);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_READ, 11, self->hmr,
			  (uintptr_t)self->host + 8192, 4096, self->bmr, IOVA));
	EXPECT_REQ_WC(11, IBV_WC_RDMA_READ, 4096);
	EXPECT_TRUE(filled(self->host + 8192, 4096, 4));
	EXPECT_EQ(0, ibv_dereg_mr(self->bmr));
	self->bmr = NULL;
}

/* ibv_rereg_mr()'s command as a process may write it: 0 or an errno. */
static int raw_rereg_access(struct ibv_mr *mr, int access)
{
	struct ib_uverbs_rereg_mr_resp resp;
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_rereg_mr cmd;
	} c = {
		.hdr = { .command = IB_USER_VERBS_CMD_REREG_MR,
			 .in_words = sizeof(c) / 4,
			 .out_words = sizeof(resp) / 4 },
		.cmd = { .response = (uintptr_t)&resp,
			 .mr_handle = mr->handle,
			 .flags = IBV_REREG_MR_CHANGE_ACCESS,
			 .access_flags = access },
	};

	return write(mr->context->cmd_fd, &c, sizeof(c)) == sizeof(c) ? 0 :
	       errno;
}

TEST_F(dmabuf, refused)
{
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);

	ASSERT_LE(0, null);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(self->pd, 0, 4096, 0, null,
					  ACCESS_ALL));
	EXPECT_EQ(EINVAL, errno);
	close(null);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(self->pd, 0, 4096, 0, 1000000,
					  ACCESS_ALL));
	EXPECT_EQ(EBADF, errno);
	/* Past the buffer's end; no bytes; differing page offsets. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(self->pd, BUF_LEN - 4096, 8192, 0,
					  self->dmabuf, ACCESS_ALL));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(self->pd, 0, 0, 0, self->dmabuf,
					  ACCESS_ALL));
	EXPECT_EQ(EINVAL, errno);
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(self->pd, 100, 4096, 0,
					  self->dmabuf, ACCESS_ALL));
	EXPECT_EQ(EINVAL, errno);
	/* Remote write without local write (IBTA C10-10). */
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(self->pd, 0, 4096, 0, self->dmabuf,
					  IBV_ACCESS_REMOTE_WRITE));
	EXPECT_EQ(EINVAL, errno);
	/* The core knows no on-demand paging of a dma-buf. */
	errno = 0;
	EXPECT_EQ(NULL, ibv_reg_dmabuf_mr(self->pd, 0, 4096, 0, self->dmabuf,
					  ACCESS_ALL | IBV_ACCESS_ON_DEMAND));
	EXPECT_EQ(EINVAL, errno);
	/*
	 * No re-registration: libibverbs refuses it for a dma-buf MR, and
	 * the kernel for a process that asks anyway (new rights only, which
	 * keep the old MR's pages); the MR stays as it was.
	 */
	errno = 0;
	EXPECT_EQ(IBV_REREG_MR_ERR_INPUT,
		  ibv_rereg_mr(self->bmr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
			       NULL, 0, IBV_ACCESS_LOCAL_WRITE));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(EOPNOTSUPP, raw_rereg_access(self->bmr,
					       IBV_ACCESS_LOCAL_WRITE));
	fill(self->host, 64, 1);
	ASSERT_EQ(0, post(self->qa, IBV_WR_RDMA_WRITE, 12, self->hmr,
			  (uintptr_t)self->host, 64, self->bmr, IOVA + 64));
	EXPECT_REQ_WC(12, IBV_WC_RDMA_WRITE, 0);
	EXPECT_TRUE(filled(self->buf + 64, 64, 1));
}

TEST_HARNESS_MAIN
