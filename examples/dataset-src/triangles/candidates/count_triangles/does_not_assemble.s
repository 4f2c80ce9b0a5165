	.text
	.p2align 4
	.globl	count_triangles
	.type	count_triangles, @function
count_triangles:
.LFB23:
	.cfi_startproc
	testl	%esi, %esi
	jle	.L14
	movl	%esi, %r8d
	cmpl	$1, %esi, %eax
	je	.L14
	pushq	%r15
	.cfi_def_cfa_offset 16
	.cfi_offset 15, -16
	movslq	%esi, %r11
	movq	%rdi, %r15
	leaq	2(%rdi), %r9
	pushq	%r14
	.cfi_def_cfa_offset 24
	.cfi_offset 14, -24
	leaq	1(%r11), %rax
	xorl	%r14d, %r14d
	negq	%r15
	pushq	%r13
	.cfi_def_cfa_offset 32
	.cfi_offset 13, -32
	movq	%rdi, %rcx
	xorl	%edx, %edx
	pxor	%xmm6, %xmm6
	pushq	%r12
	.cfi_def_cfa_offset 40
	.cfi_offset 12, -40
	pxor	%xmm5, %xmm5
	pxor	%xmm3, %xmm3
	movq	%r9, %r10
	pushq	%rbp
	.cfi_def_cfa_offset 48
	.cfi_offset 6, -48
	pushq	%rbx
	.cfi_def_cfa_offset 56
	.cfi_offset 3, -56
	leal	-1(%rsi), %ebx
	movq	%r15, %rsi
	movq	%rax, -24(%rsp)
	movl	$1, %eax
	movl	%eax, -28(%rsp)
	movl	%r14d, -16(%rsp)
	movl	%ebx, -12(%rsp)
	movq	%r11, %rbx
	.p2align 4,,10
	.p2align 3
.L12:
	movl	-16(%rsp), %r9d
	movl	-12(%rsp), %ebp
	movq	%r10, %rdi
	leaq	-1(%rsi), %r15
	movl	-28(%rsp), %r11d
	movl	%r9d, %r12d
	addl	%r8d, %r9d
	movl	%r9d, -16(%rsp)
	subl	%r11d, %ebp
	.p2align 4,,10
	.p2align 3
.L11:
	addl	$1, %r11d
	cmpb	$0, -1(%rdi)
	jne	.L26
	addl	%r8d, %r9d
	subl	$1, %ebp
	addq	$1, %rdi
	cmpl	%r11d, %r8d
	jg	.L11
.L5:
	addl	$1, -28(%rsp)
	movq	-24(%rsp), %rdi
	subq	%rbx, %rsi
	movl	-28(%rsp), %eax
	addq	%rdi, %r10
	cmpl	%eax, %r8d
	jne	.L12
	popq	%rbx
	.cfi_remember_state
	.cfi_def_cfa_offset 48
	movq	%rdx, %rax
	popq	%rbp
	.cfi_def_cfa_offset 40
	popq	%r12
	.cfi_def_cfa_offset 32
	popq	%r13
	.cfi_def_cfa_offset 24
	popq	%r14
	.cfi_def_cfa_offset 16
	popq	%r15
	.cfi_def_cfa_offset 8
	ret
	.p2align 4,,10
	.p2align 3
.L26:
	.cfi_restore_state
	cmpl	%r11d, %r8d
	jle	.L5
	leal	-1(%rbp), %eax
	movl	%eax, -32(%rsp)
	cmpl	$14, %eax
	jbe	.L15
	leaq	(%r15,%rdi), %r13
	movslq	%r9d, %rax
	pxor	%xmm0, %xmm0
	leaq	1(%r13,%rax), %r14
	movl	%ebp, %r13d
	xorl	%eax, %eax
	shrl	$4, %r13d
	addq	%rcx, %r14
	salq	$4, %r13
	.p2align 4,,10
	.p2align 3
.L7:
	movdqu	(%r14,%rax), %xmm7
	movdqu	(%rdi,%rax), %xmm2
	addq	$16, %rax
	pand	%xmm7, %xmm2
	movdqa	%xmm2, %xmm4
	punpckhbw	%xmm6, %xmm2
	punpcklbw	%xmm6, %xmm4
	movdqa	%xmm2, %xmm7
	punpckhwd	%xmm5, %xmm2
	movdqa	%xmm4, %xmm8
	punpckhwd	%xmm5, %xmm4
	punpcklwd	%xmm5, %xmm7
	punpcklwd	%xmm5, %xmm8
	movdqa	%xmm8, %xmm1
	punpckhdq	%xmm3, %xmm8
	punpckldq	%xmm3, %xmm1
	paddq	%xmm1, %xmm0
	movdqa	%xmm4, %xmm1
	punpckhdq	%xmm3, %xmm4
	punpckldq	%xmm3, %xmm1
	paddq	%xmm8, %xmm0
	paddq	%xmm1, %xmm0
	movdqa	%xmm7, %xmm1
	punpckhdq	%xmm3, %xmm7
	punpckldq	%xmm3, %xmm1
	paddq	%xmm4, %xmm0
	paddq	%xmm1, %xmm0
	movdqa	%xmm2, %xmm1
	punpckhdq	%xmm3, %xmm2
	paddq	%xmm7, %xmm0
	punpckldq	%xmm3, %xmm1
	paddq	%xmm1, %xmm0
	paddq	%xmm2, %xmm0
	cmpq	%rax, %r13
	jne	.L7
	movdqa	%xmm0, %xmm1
	psrldq	$8, %xmm1
	paddq	%xmm1, %xmm0
	movq	%xmm0, %rax
	addq	%rax, %rdx
	movl	%ebp, %eax
	andl	$-16, %eax
	addl	%r11d, %eax
	andl	$15, %ebp
	je	.L10
.L6:
	leal	(%r9,%rax), %ebp
	leal	(%r12,%rax), %r13d
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%rbp), %ebp
	andb	(%rcx,%r13), %bpl
	movzbl	%bpl, %ebp
	addq	%rbp, %rdx
	leal	1(%rax), %ebp
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	2(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	3(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	4(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	5(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	6(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	7(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	8(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	9(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	10(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	11(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	12(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	movslq	%ebp, %rbp
	movslq	%r13d, %r13
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	leal	13(%rax), %ebp
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%ebp, %r8d
	jle	.L10
	leal	(%r9,%rbp), %r13d
	addl	%r12d, %ebp
	addl	$14, %eax
	movslq	%r13d, %r13
	movslq	%ebp, %rbp
	movzbl	(%rcx,%r13), %r13d
	andb	(%rcx,%rbp), %r13b
	movzbl	%r13b, %r13d
	addq	%r13, %rdx
	cmpl	%eax, %r8d
	jle	.L10
	leal	(%r12,%rax), %ebp
	addl	%r9d, %eax
	movslq	%ebp, %rbp
	cltq
	movzbl	(%rcx,%rbp), %ebp
	andb	(%rcx,%rax), %bpl
	movzbl	%bpl, %ebp
	addq	%rbp, %rdx
	.p2align 4,,10
	.p2align 3
.L10:
	movl	-32(%rsp), %ebp
	addl	%r8d, %r9d
	addq	$1, %rdi
	jmp	.L11
.L15:
	movl	%r11d, %eax
	jmp	.L6
.L14:
	.cfi_def_cfa_offset 8
	.cfi_restore 3
	.cfi_restore 6
	.cfi_restore 12
	.cfi_restore 13
	.cfi_restore 14
	.cfi_restore 15
	xorl	%edx, %edx
	movq	%rdx, %rax
	ret
	.cfi_endproc
.LFE23:
	.size	count_triangles, .-count_triangles
